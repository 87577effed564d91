/* SPDX-License-Identifier: Apache-2.0 */
/*
 * msgdec.h — decoding the reference collector's message text into args
 * members (msgdec.c). Writer thread only (one sp_msg per writer).
 */
#ifndef SERVPROF_MSGDEC_H
#define SERVPROF_MSGDEC_H

#include <stddef.h>
#include <stdint.h>

#include "argbuild.h"

typedef struct sp_msg {
    int present;    /* the record carried a message */
    int take;       /* its name and domain are to be taken from the message */
    int type;       /* the message's "type" (0..3), -1 when it had none */
    int malformed;  /* the text was not a JSON object: kept as "raw" */
    int has_name, has_domain;
    sp_sbuf name, domain; /* decoded, valid UTF-8 (NUL-terminated) */
    sp_sbuf text, key, val, str; /* scratch */
} sp_msg;

/* Forgets the last record's message (keeps the buffers). */
void sp_msg_reset(sp_msg *m);
void sp_msg_free(sp_msg *m);

/* When the attribute at *p (bounded by end) is SP_TAG_MSG: consumes it,
 * decodes its text and appends the members to b as `,"key":value` (the
 * form sp_args_members writes). Otherwise leaves *p alone. Returns 1 when
 * a message was decoded, 0 when there was none, -1 on a malformed record
 * (a bug of the producer). */
int sp_msg_take(sp_msg *m, sp_sbuf *b, const uint8_t **p, const uint8_t *end);

/* Decodes n bytes of message text (see msgdec.c for the forms) into m and
 * members appended to b. Never fails: text that is not a JSON object keeps
 * the members read before the fault plus "raw": the whole text, and sets
 * m->malformed. */
void sp_msg_decode(sp_msg *m, sp_sbuf *b, const char *text, size_t n);

/* Applies the message to a row being written: its name and domain when the
 * record has none of its own (m->take), its "type" for events. Returns 0
 * when the row must be skipped (a domain taken from the message that the
 * domain filter does not keep). */
int sp_msg_apply(sp_msg *m, int is_event, const char **name, size_t *nl, const char **cat,
                 size_t *cl, int *type);

/* A libFuzzer-style entry over the decoder: decodes data as a message both
 * ways (JSON / legacy, with and without taking name and domain) and checks
 * that the result is valid JSON. Returns 0; aborts when the decoder produced
 * text that is not JSON (a bug). Not exported from libservprof.so (hidden,
 * like every internal): the test and the fuzz target link the static
 * library. */
int servprof__msg_fuzz(const uint8_t *data, size_t size);

#endif /* SERVPROF_MSGDEC_H */
