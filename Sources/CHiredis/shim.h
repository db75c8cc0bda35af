#ifndef TOKENPROXY_CHIREDIS_SHIM_H
#define TOKENPROXY_CHIREDIS_SHIM_H

#include <hiredis/hiredis.h>

// redisCommandArgv takes binary-safe arguments (pointer and length each), so no value is
// ever formatted into a command string; redisCommand's printf-style variadic form is not
// used. The reply type constants are plain macros Swift imports as integers; these give
// them one spelling across hiredis 0.14 and 1.x.

/// The context's error message (a char array Swift sees as a tuple).
static inline const char *tp_redis_errstr(const redisContext *context) { return context->errstr; }

static inline int tp_redis_reply_string(void) { return REDIS_REPLY_STRING; }
static inline int tp_redis_reply_array(void) { return REDIS_REPLY_ARRAY; }
static inline int tp_redis_reply_integer(void) { return REDIS_REPLY_INTEGER; }
static inline int tp_redis_reply_nil(void) { return REDIS_REPLY_NIL; }
static inline int tp_redis_reply_status(void) { return REDIS_REPLY_STATUS; }
static inline int tp_redis_reply_error(void) { return REDIS_REPLY_ERROR; }

#endif
