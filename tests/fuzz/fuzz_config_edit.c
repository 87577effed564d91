/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_config_edit.c — the editor behind `servprof enable/disable`
 * (common/config_edit.c): the first byte picks the value, the rest is the
 * file's text. An edit it reports as done must read back, through the
 * library's own parser, with "enable" set to that value whenever the
 * library accepts the file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "runtime.h"

static void quiet(void *ctx, int is_error, const char *msg)
{
    (void)ctx;
    (void)is_error;
    (void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int value = data[0] & 1;
    char *out = NULL, err[512];
    size_t outlen = 0;
    if (sp_config_edit_enable_text((const char *)data + 1, size - 1, value, &out, &outlen, err, sizeof err) == 0) {
        sp_config c;
        sp_config_diag d;
        memset(&d, 0, sizeof d);
        d.emit = quiet;
        sp_config_defaults(&c);
        if (sp_config_parse(out, outlen, &c, &d) == 0 && c.enable != value)
            abort(); /* the edit said done, the library reads another value */
    }
    free(out);
    return 0;
}
