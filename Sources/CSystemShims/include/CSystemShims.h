#ifndef TOKENPROXY_CSYSTEMSHIMS_H
#define TOKENPROXY_CSYSTEMSHIMS_H

#include <sys/socket.h>

/// accept4(2) is a GNU extension that Glibc's Swift module does not export.
int tp_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);

#endif
