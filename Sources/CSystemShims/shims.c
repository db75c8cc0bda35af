#define _GNU_SOURCE
#include <pthread.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include "CSystemShims.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TP_THREAD_SANITIZER 1
void __tsan_acquire(void *address);
void __tsan_release(void *address);
#endif
#endif

static pthread_key_t read_buffer_key;
static pthread_once_t read_buffer_once = PTHREAD_ONCE_INIT;
static __thread unsigned char *read_buffer;

static void make_read_buffer_key(void) {
    if (pthread_key_create(&read_buffer_key, free) != 0) {
        abort();
    }
}

unsigned char *tp_thread_read_buffer(void) {
    if (read_buffer == NULL) {
        pthread_once(&read_buffer_once, make_read_buffer_key);
        read_buffer = malloc(TP_THREAD_READ_BUFFER_SIZE);
        // The key's destructor frees it when the thread ends (Dispatch ends idle workers).
        if (read_buffer == NULL || pthread_setspecific(read_buffer_key, read_buffer) != 0) {
            abort();
        }
    }
    return read_buffer;
}

int tp_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
    return accept4(fd, address, length, flags);
}

int tp_spawn_file_actions_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

int tp_wakeup_eventfd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

void tp_name_current_thread(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

void tp_tsan_acquire(void *address) {
#ifdef TP_THREAD_SANITIZER
    __tsan_acquire(address);
#else
    (void)address;
#endif
}

void tp_tsan_release(void *address) {
#ifdef TP_THREAD_SANITIZER
    __tsan_release(address);
#else
    (void)address;
#endif
}
