#define _GNU_SOURCE
#include <errno.h>
#include <sys/epoll.h>
#include "CSystemShims.h"

// `struct epoll_event` is packed on x86-64, which Swift imports awkwardly: these wrappers keep
// it on the C side.

int tp_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int tp_epoll_watch(int ep, int fd, int readable, int writable, int watched) {
    struct epoll_event event = {0};
    event.events = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
    event.data.fd = fd;
    int first = watched ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(ep, first, fd, &event) == 0) {
        return 0;
    }
    if (errno != (watched ? ENOENT : EEXIST)) {
        return -1;
    }
    return epoll_ctl(ep, watched ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &event);
}

void tp_epoll_unwatch(int ep, int fd) {
    struct epoll_event event = {0};
    (void)epoll_ctl(ep, EPOLL_CTL_DEL, fd, &event);
}

int tp_epoll_wait(int ep, int *fds, int *flags, int capacity, int timeout) {
    struct epoll_event events[64];
    if (capacity > 64) {
        capacity = 64;
    }
    int count = epoll_wait(ep, events, capacity, timeout);
    for (int index = 0; index < count; index++) {
        uint32_t ready = events[index].events;
        // A hang-up or an error is reported as readable and writable, as libcurl's own poll
        // does for a readable socket: the read or write that follows meets the end or the
        // error and fails the transfer with it.
        uint32_t broken = ready & (EPOLLERR | EPOLLHUP);
        fds[index] = events[index].data.fd;
        flags[index] = (((ready & EPOLLIN) || broken) ? 1 : 0) | (((ready & EPOLLOUT) || broken) ? 2 : 0);
    }
    return count;
}
