/*
 * What libcurl alone costs per request, as tokenproxy's engine uses it: one multi handle,
 * CONCURRENCY easy handles reused for REQUESTS requests in all, each a GET of URL over a
 * kept-alive, verified TLS connection with one added header, the body discarded. Prints the
 * CPU time (user and system, from getrusage) and the wall time per request, and counts as
 * failed every transfer that did not end in a 200.
 *
 *   libcurl_floor URL CA_FILE REQUESTS CONCURRENCY
 *
 * Built and run by bench/libcurl-floor.sh.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static size_t discard(char *data, size_t size, size_t count, void *user) {
    (void)data;
    (void)user;
    return size * count;
}

static double seconds(struct timeval value) { return value.tv_sec + value.tv_usec / 1e6; }

static double now(void) {
    struct timespec spec;
    clock_gettime(CLOCK_MONOTONIC, &spec);
    return spec.tv_sec + spec.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s URL CA_FILE REQUESTS CONCURRENCY\n", argv[0]);
        return 2;
    }
    const char *url = argv[1];
    const char *ca = argv[2];
    long requests = strtol(argv[3], NULL, 10);
    long concurrency = strtol(argv[4], NULL, 10);
    if (requests < 1 || concurrency < 1 || concurrency > 4096) {
        fprintf(stderr, "REQUESTS and CONCURRENCY must be positive (CONCURRENCY at most 4096)\n");
        return 2;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURLM *multi = curl_multi_init();
    struct curl_slist *headers = curl_slist_append(NULL, "Authorization: Bearer bench-token");
    CURL **handles = calloc((size_t)concurrency, sizeof(CURL *));
    long started = 0, finished = 0, failed = 0;
    for (long index = 0; index < concurrency; index++) {
        CURL *easy = curl_easy_init();
        curl_easy_setopt(easy, CURLOPT_URL, url);
        curl_easy_setopt(easy, CURLOPT_CAINFO, ca);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, 128L * 1024);
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        handles[index] = easy;
    }
    /* Warm up: one request per handle, so every connection is open before measuring. */
    for (int phase = 0; phase < 2; phase++) {
        long total = phase == 0 ? concurrency : requests;
        started = finished = failed = 0;
        struct rusage before;
        getrusage(RUSAGE_SELF, &before);
        double start = now();
        for (long index = 0; index < concurrency && started < total; index++, started++) {
            curl_multi_add_handle(multi, handles[index]);
        }
        int running = 1;
        while (finished < total) {
            curl_multi_perform(multi, &running);
            CURLMsg *message;
            int left;
            while ((message = curl_multi_info_read(multi, &left))) {
                if (message->msg != CURLMSG_DONE) continue;
                CURL *easy = message->easy_handle;
                long status = 0;
                curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
                if (message->data.result != CURLE_OK || status != 200) failed++;
                curl_multi_remove_handle(multi, easy);
                finished++;
                if (started < total) {
                    curl_multi_add_handle(multi, easy);
                    started++;
                }
            }
            if (finished < total) curl_multi_poll(multi, NULL, 0, 1000, NULL);
        }
        if (phase == 1) {
            double wall = now() - start;
            struct rusage after;
            getrusage(RUSAGE_SELF, &after);
            double user = seconds(after.ru_utime) - seconds(before.ru_utime);
            double system = seconds(after.ru_stime) - seconds(before.ru_stime);
            printf("%ld requests, concurrency %ld, %ld failed: %.0f req/s; per request: wall %.1f us, "
                   "CPU %.1f us (user %.1f, system %.1f)\n",
                   requests, concurrency, failed, requests / wall, wall / requests * 1e6,
                   (user + system) / requests * 1e6, user / requests * 1e6, system / requests * 1e6);
        }
    }
    for (long index = 0; index < concurrency; index++) curl_easy_cleanup(handles[index]);
    curl_multi_cleanup(multi);
    curl_slist_free_all(headers);
    free(handles);
    return failed == 0 ? 0 : 1;
}
