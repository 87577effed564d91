/* SPDX-License-Identifier: Apache-2.0 */
/*
 * consumer.c — a program that uses an installed servprof as a server team
 * would: includes <servprof.h>, links -lservprof (or servprof::servprof),
 * records one event into a session it starts, and checks what it can see.
 * Built by test_install.py out of tree, against a temporary prefix.
 * Prints "consumer ok <version> <rows written>" and exits 0 when all is well.
 *
 * With -DSERVPROF_DISABLE the same source compiles with no library at all:
 * every call does nothing, so it prints "consumer off <version> 0".
 */
#include <servprof.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    if (servprof_version() != SERVPROF_VERSION_HEX ||
        strcmp(servprof_version_string(), SERVPROF_VERSION) != 0) {
        fprintf(stderr, "consumer: header %s, library %s\n", SERVPROF_VERSION,
                servprof_version_string());
        return 1;
    }
    int rc = servprof_start();
#ifdef SERVPROF_DISABLE
    if (rc != SERVPROF_ESTATE || servprof_is_enabled(SERVPROF_LEVEL_ERROR))
        return 1;
#else
    if (rc != 0) {
        fprintf(stderr, "consumer: servprof_start: %s\n", servprof_strerror(rc));
        return 1;
    }
#endif
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, "req-1");
    servprof_metric(r, "QueueSize", 3);
    servprof_event(r, "httpReq");
    servprof_stop();
    servprof_stats st;
    servprof_get_stats(&st);
#ifdef SERVPROF_DISABLE
    printf("consumer off %s %llu\n", SERVPROF_VERSION, (unsigned long long)st.written);
    return st.written == 0 ? 0 : 1;
#else
    printf("consumer ok %s %llu\n", servprof_version_string(), (unsigned long long)st.written);
    return st.written >= 1 ? 0 : 1;
#endif
}
