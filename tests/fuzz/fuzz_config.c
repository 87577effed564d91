/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_config.c — the library's config parser (common/config.c): any text a
 * user may save as the file named by SERVICE_PROF_CONFIG_PATH. Messages
 * are swallowed; the result must be a config within the documented ranges.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void quiet(void *ctx, int is_error, const char *msg)
{
    (void)ctx;
    (void)is_error;
    (void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sp_config c;
    sp_config_diag d;
    memset(&d, 0, sizeof d);
    d.emit = quiet;
    sp_config_defaults(&c);
    if (sp_config_parse((const char *)data, size, &c, &d) == 0) {
        if ((c.enable != 0 && c.enable != 1) || c.ndomains < 0 || c.ndomains > SP_MAX_DOMAINS ||
            memchr(c.prof_dir, 0, sizeof c.prof_dir) == NULL)
            abort(); /* out of the documented ranges, or an unterminated string */
    }
    return 0;
}
