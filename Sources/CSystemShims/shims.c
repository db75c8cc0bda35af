#define _GNU_SOURCE
#include <sys/socket.h>
#include "CSystemShims.h"

static __thread unsigned char thread_read_buffer[TP_THREAD_READ_BUFFER_SIZE];

unsigned char *tp_thread_read_buffer(void) {
    return thread_read_buffer;
}

int tp_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
    return accept4(fd, address, length, flags);
}
