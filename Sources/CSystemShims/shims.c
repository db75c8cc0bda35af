#define _GNU_SOURCE
#include <sys/socket.h>
#include "CSystemShims.h"

int tp_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
    return accept4(fd, address, length, flags);
}
