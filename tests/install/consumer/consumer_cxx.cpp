// SPDX-License-Identifier: Apache-2.0
// consumer_cxx.cpp — the installed servprof.h used from C++ through
// find_package(servprof): records one event and checks it was written.
// Prints "consumer ok <version> <rows written>" like consumer.c.
#include <servprof.h>

#include <cstdio>
#include <cstring>

int main()
{
    if (servprof_version() != SERVPROF_VERSION_HEX)
        return 1;
    if (servprof_start() != 0)
        return 1;
    servprof_rec *r = servprof_rec_begin(SERVPROF_LEVEL_INFO, "Request");
    servprof_res_str(r, "req-cxx");
    servprof_event(r, "httpReq");
    servprof_stop();
    servprof_stats st;
    servprof_get_stats(&st);
    std::printf("consumer ok %s %llu\n", servprof_version_string(),
                static_cast<unsigned long long>(st.written));
    return st.written >= 1 ? 0 : 1;
}
