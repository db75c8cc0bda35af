#ifndef TOKENPROXY_CSYSTEMSHIMS_H
#define TOKENPROXY_CSYSTEMSHIMS_H

#include <spawn.h>
#include <sys/socket.h>

/// accept4(2) is a GNU extension that Glibc's Swift module does not export.
int tp_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);

/// The size of the buffer `tp_thread_read_buffer` returns.
#define TP_THREAD_READ_BUFFER_SIZE 65536

/// A buffer of the calling thread's own, for reading from a socket before the bytes are
/// appended where they belong: allocated at the thread's first call and freed when the
/// thread ends, so a read needs no allocation (a 64 KiB `malloc` and `free` per read also
/// made glibc consolidate its free lists each time), and threads that never read (the
/// upstream engines, the log writer) carry none.
unsigned char *tp_thread_read_buffer(void);

/// posix_spawn_file_actions_addclosefrom_np(3), a GNU extension Glibc's Swift module does not
/// export: the spawned program gets no descriptor from `from` up (sockets, lock files).
int tp_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from);

/// A non-blocking, close-on-exec eventfd(2) for waking a thread that polls, or -1.
int tp_wakeup_eventfd(void);

/// A close-on-exec epoll(7) set, or -1.
int tp_epoll_create(void);

/// Watches `fd` in the epoll set `ep` for reading when `readable`, writing when `writable`
/// (level-triggered): changes what it is watched for when `watched` says it is in the set,
/// adds it otherwise (either falls back to the other when the guess was wrong). 0, or -1
/// with errno.
int tp_epoll_watch(int ep, int fd, int readable, int writable, int watched);

/// Stops watching `fd` (a descriptor that is not watched is no failure).
void tp_epoll_unwatch(int ep, int fd);

/// Waits at most `timeout` ms (0: not at all, -1: without end) for ready descriptors of
/// `ep`, and takes at most `capacity` (at most 64) of them into `fds`, with what each is
/// ready for in `flags` (1 readable, 2 writable: libcurl's `CURL_CSELECT_IN` and `_OUT`; an
/// error or a hang-up is both); returns how many, or -1 with errno.
int tp_epoll_wait(int ep, int *fds, int *flags, int capacity, int timeout);

/// Names the calling thread for the OS (prctl PR_SET_NAME keeps at most 15 bytes).
void tp_name_current_thread(const char *name);

/// Tells the thread sanitizer that the calling thread acquired the lock at `address` (a build
/// without it does nothing). `Synchronization.Mutex` on Linux hands a contended lock from
/// thread to thread in the kernel (a priority-inheritance futex) inside the Swift runtime,
/// which the sanitizer does not see; these two calls give it the order the lock makes.
void tp_tsan_acquire(void *address);

/// Tells the thread sanitizer that the calling thread is about to release the lock at
/// `address` (a build without it does nothing).
void tp_tsan_release(void *address);

/// The contents of the repository's VERSION file as the build found it (trailing newline
/// included), NUL-terminated.
const char *tp_version_file(void);

/// The commit scripts/build-release.sh recorded in the binary: "" when it built a release
/// tag, the commit (with ", with uncommitted changes" when the checkout differed from it)
/// otherwise, NULL when the binary was built without that script.
const char *tp_recorded_build_commit(void);

#endif
