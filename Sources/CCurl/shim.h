#ifndef TOKENPROXY_CCURL_SHIM_H
#define TOKENPROXY_CCURL_SHIM_H

#include <curl/curl.h>

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

static inline CURLcode tp_easy_setopt_prereq_callback(
    CURL *handle, int (*callback)(void *, char *, char *, int, int)) {
    return curl_easy_setopt(handle, CURLOPT_PREREQFUNCTION, callback);
}

static inline int tp_prereq_ok(void) {
    return CURL_PREREQFUNC_OK;
}

static inline int tp_prereq_abort(void) {
    return CURL_PREREQFUNC_ABORT;
}

static inline CURLcode tp_easy_setopt_opensocket_callback(
    CURL *handle, curl_socket_t (*callback)(void *, curlsocktype, struct curl_sockaddr *)) {
    return curl_easy_setopt(handle, CURLOPT_OPENSOCKETFUNCTION, callback);
}

static inline CURLcode tp_easy_getinfo_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode tp_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode tp_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLcode tp_easy_getinfo_socket(CURL *handle, CURLINFO info, curl_socket_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

static inline CURLMcode tp_multi_setopt_long(CURLM *handle, CURLMoption option, long value) {
    return curl_multi_setopt(handle, option, value);
}

/// libcurl's CURLMOPT_SOCKETFUNCTION: told which socket a transfer waits on, and for what.
typedef int (*tp_socket_callback)(CURL *easy, curl_socket_t socket, int what, void *userp, void *socketp);

/// Sets CURLMOPT_SOCKETFUNCTION and CURLMOPT_SOCKETDATA.
static inline CURLMcode tp_multi_setopt_socket_callback(CURLM *handle, tp_socket_callback callback, void *userp) {
    CURLMcode result = curl_multi_setopt(handle, CURLMOPT_SOCKETFUNCTION, callback);
    if (result != CURLM_OK) {
        return result;
    }
    return curl_multi_setopt(handle, CURLMOPT_SOCKETDATA, userp);
}

/// `CURL_SOCKET_TIMEOUT` (a macro in multi.h).
static inline curl_socket_t tp_socket_timeout(void) { return CURL_SOCKET_TIMEOUT; }

/// The value libcurl's read callback returns to pause a transfer (a macro in curl.h).
static inline size_t tp_readfunc_pause(void) { return CURL_READFUNC_PAUSE; }

/// The value libcurl's write callback returns to pause a transfer (a macro in curl.h).
static inline size_t tp_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }

/// The value libcurl's read callback returns to abort a transfer (a macro in curl.h).
static inline size_t tp_readfunc_abort(void) { return CURL_READFUNC_ABORT; }

static inline int tp_pause_cont(void) { return CURLPAUSE_CONT; }

#endif
