/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_dropin_msg.c — the drop-in's message decoder (lib/record/msgdec.c): the
 * text the reference's clients hand to libms_service_profiler.so (JSON from
 * its Python package, `^key^:value,` attribute text from its C++ header),
 * turned into a native record's args on the writer thread. The checks live
 * in servprof__msg_fuzz (lib/record/msgdec.h): the output must be JSON.
 */
#include <stddef.h>
#include <stdint.h>

#include "msgdec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return servprof__msg_fuzz(data, size);
}
