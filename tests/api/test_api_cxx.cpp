/* SPDX-License-Identifier: Apache-2.0 */
// test_api_cxx.cpp — servprof.h compiles as C++11 and its calls work from C++:
// a session started through the API records an event and a span, and the
// inline check sees the level the runtime published.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

#include "servprof.h"

static int failures;
#define EXPECT(c) do { if (!(c)) { std::fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

int main()
{
    char dir[] = "/tmp/servprof-cxx-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    std::string cfg = std::string(dir) + "/cfg.json";
    FILE *f = std::fopen(cfg.c_str(), "w");
    std::fprintf(f, "{\"enable\": 0, \"prof_dir\": \"%s/prof\"}\n", dir);
    std::fclose(f);
    setenv("SERVICE_PROF_CONFIG_PATH", cfg.c_str(), 1);

    EXPECT(servprof_init() == 0);
    EXPECT(!servprof_is_enabled(SERVPROF_LEVEL_INFO));
    EXPECT(servprof_start() == 0);
    EXPECT(servprof_is_enabled(SERVPROF_LEVEL_INFO));
    EXPECT(!servprof_is_enabled(SERVPROF_LEVEL_VERBOSE));

    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    EXPECT(r != nullptr);
    servprof_res_str(r, "cxx-1");
    servprof_event(r, "httpReq");
    servprof_span s = servprof_span_begin(servprof_rec_begin(SERVPROF_LEVEL_INFO, "Execute"), "forward");
    EXPECT(s != 0);
    servprof_span_end(s);

    char store[4096];
    EXPECT(servprof_store_path(store, sizeof store) == 0);
    EXPECT(servprof_stop() == 0);
    EXPECT(!servprof_is_enabled(SERVPROF_LEVEL_ERROR));
    servprof_stats st;
    servprof_get_stats(&st);
    EXPECT(st.written >= 2);
    EXPECT(access(store, R_OK) == 0);
    servprof_shutdown();
    std::string rm = std::string("rm -rf ") + dir;
    if (std::system(rm.c_str()) != 0) failures++;
    std::fprintf(stderr, "%d failed\n", failures);
    return failures ? 1 : 0;
}
