#ifndef TOKENPROXY_CCURL_SHIM_H
#define TOKENPROXY_CCURL_SHIM_H

#include <curl/curl.h>
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

// libcurl's setopt/getinfo/multi_setopt calls are variadic C functions, which Swift
// cannot call directly. These typed wrappers give Swift one entry point per argument
// type; the option constants themselves are plain enum values Swift can see.

static inline CURLcode tp_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode tp_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode tp_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode tp_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode tp_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode tp_easy_setopt_write_callback(
    CURL *handle, size_t (*callback)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode tp_easy_setopt_read_callback(
    CURL *handle, size_t (*callback)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, CURLOPT_READFUNCTION, callback);
}

static inline CURLcode tp_easy_setopt_header_callback(
    CURL *handle, size_t (*callback)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, callback);
}

static inline CURLcode tp_easy_setopt_opensocket_callback(
    CURL *handle, curl_socket_t (*callback)(void *, curlsocktype, struct curl_sockaddr *)) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, callback);
}

static inline CURLcode tp_easy_setopt_closesocket_callback(
    CURL *handle, int (*callback)(void *, curl_socket_t)) {
    return curl_easy_setopt(handle, CURLOPT_CLOSESOCKETFUNCTION, callback);
}

static inline CURLMcode tp_multi_setopt_socket_callback(
    CURLM *handle, int (*callback)(CURL *, curl_socket_t, int, void *, void *)) {
    return curl_multi_setopt(handle, CURLMOPT_SOCKETFUNCTION, callback);
}

static inline CURLMcode tp_multi_setopt_timer_callback(
    CURLM *handle, int (*callback)(CURLM *, long, void *)) {
    return curl_multi_setopt(handle, CURLMOPT_TIMERFUNCTION, callback);
}

static inline CURLcode tp_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode tp_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode tp_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

static inline CURLMcode tp_multi_setopt_pointer(CURLM *handle, CURLMoption option, void *value) {
    return curl_multi_setopt(handle, option, value);
}

/// The value libcurl's read callback returns to pause a transfer (a macro in curl.h).
static inline size_t tp_readfunc_pause(void) { return CURL_READFUNC_PAUSE; }

/// The value libcurl's write callback returns to pause a transfer (a macro in curl.h).
static inline size_t tp_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }

/// The value libcurl's read callback returns to abort a transfer (a macro in curl.h).
static inline size_t tp_readfunc_abort(void) { return CURL_READFUNC_ABORT; }

static inline curl_socket_t tp_socket_timeout(void) { return CURL_SOCKET_TIMEOUT; }
static inline int tp_poll_in(void) { return CURL_POLL_IN; }
static inline int tp_poll_out(void) { return CURL_POLL_OUT; }
static inline int tp_poll_inout(void) { return CURL_POLL_INOUT; }
static inline int tp_poll_remove(void) { return CURL_POLL_REMOVE; }
static inline int tp_cselect_in(void) { return CURL_CSELECT_IN; }
static inline int tp_cselect_out(void) { return CURL_CSELECT_OUT; }

static inline int tp_pause_all(void) { return CURLPAUSE_ALL; }
static inline int tp_pause_cont(void) { return CURLPAUSE_CONT; }

// epoll for the epoll engine. glibc declares `struct epoll_event` packed on x86_64, which
// Swift does not import faithfully; these wrappers keep the struct on the C side.

/// Sets the events epoll watches `fd` for to libcurl's `what` (CURL_POLL_IN, _OUT or _INOUT):
/// `add` registers it, otherwise its registration is changed. Returns 0 or an errno value.
static inline int tp_epoll_watch(int epfd, int fd, int what, int add) {
    struct epoll_event event = {0};
    event.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    event.data.fd = fd;
    return epoll_ctl(epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event) == 0 ? 0 : errno;
}

/// Stops watching `fd`.
static inline void tp_epoll_forget(int epfd, int fd) {
    epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
}

/// Waits up to `timeout` ms for at most `capacity` ready descriptors and stores each one's
/// descriptor and libcurl event mask (CURL_CSELECT_*); returns how many, or -1 with errno.
static inline int tp_epoll_wait(int epfd, int *fds, int *masks, int capacity, int timeout) {
    struct epoll_event events[64];
    if (capacity > 64) capacity = 64;
    int count = epoll_wait(epfd, events, capacity, timeout);
    for (int i = 0; i < count; i++) {
        uint32_t ready = events[i].events;
        fds[i] = events[i].data.fd;
        masks[i] = (ready & (EPOLLIN | EPOLLHUP | EPOLLRDHUP) ? CURL_CSELECT_IN : 0)
            | (ready & EPOLLOUT ? CURL_CSELECT_OUT : 0) | (ready & EPOLLERR ? CURL_CSELECT_ERR : 0);
    }
    return count;
}

/// Adds an eventfd to `epfd` for wake-ups; returns the eventfd, or -1.
static inline int tp_epoll_add_wakeup(int epfd) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return -1;
    struct epoll_event event = {0};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/// A non-blocking eventfd for wake-ups, or -1.
static inline int tp_wakeup_eventfd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

/// Names the calling thread for the OS (at most 15 bytes are kept).
static inline void tp_name_current_thread(const char *name) {
    prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0);
}

#endif
