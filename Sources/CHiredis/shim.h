#ifndef TOKENPROXY_CHIREDIS_SHIM_H
#define TOKENPROXY_CHIREDIS_SHIM_H

#include <fcntl.h>
#include <hiredis/hiredis.h>

// redisAppendCommandArgv takes binary-safe arguments (pointer and length each), so no value
// is ever formatted into a command string; redisCommand's printf-style variadic form is not
// used. The reply type constants are plain macros Swift imports as integers; these give
// them one spelling across hiredis 0.14 and 1.x.

/// The context's error message (a char array Swift sees as a tuple).
static inline const char *tp_redis_errstr(const redisContext *context) { return context->errstr; }

/// The context's socket.
static inline int tp_redis_fd(const redisContext *context) { return context->fd; }

/// The context's protocol reader, which the caller feeds the bytes it reads.
static inline redisReader *tp_redis_reader(redisContext *context) { return context->reader; }

/// How many bytes the reader holds beyond the answers it gave: after one answer to one
/// command, any are a server's extra answers.
static inline size_t tp_redis_reader_pending(const redisContext *context) {
    return context->reader->len - context->reader->pos;
}

/// Puts the context's socket in non-blocking mode and tells hiredis so (a read or write that
/// would block is then "try again", not an error); 0 on success, -1 with errno set.
static inline int tp_redis_set_nonblocking(redisContext *context) {
    int flags = fcntl(context->fd, F_GETFL);
    if (flags < 0 || fcntl(context->fd, F_SETFL, flags | O_NONBLOCK) < 0) { return -1; }
    context->flags &= ~REDIS_BLOCK;
    return 0;
}

static inline int tp_redis_reply_string(void) { return REDIS_REPLY_STRING; }
static inline int tp_redis_reply_array(void) { return REDIS_REPLY_ARRAY; }
static inline int tp_redis_reply_integer(void) { return REDIS_REPLY_INTEGER; }
static inline int tp_redis_reply_nil(void) { return REDIS_REPLY_NIL; }
static inline int tp_redis_reply_status(void) { return REDIS_REPLY_STATUS; }
static inline int tp_redis_reply_error(void) { return REDIS_REPLY_ERROR; }

#endif
