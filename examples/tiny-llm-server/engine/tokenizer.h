/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tokenizer.h — a toy word-level tokenizer: text to token ids and back.
 * The text is not the point of the demo; the costs and the counts are.
 * Thread-safe (no state).
 */
#ifndef TL_TOKENIZER_H
#define TL_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

/* Splits text on whitespace; each word becomes hash(word) mod vocab.
 * Writes at most cap ids into out and returns how many words there were
 * (which may exceed cap: the caller sees the prompt was too long). */
int tl_tokenize(const char *text, size_t len, int vocab, int32_t *out, int cap);

/* Writes the text of one token (" " + a pronounceable word) into buf and
 * returns its length (< cap; at most TL_TOKEN_TEXT_MAX - 1). */
#define TL_TOKEN_TEXT_MAX 16
int tl_detokenize(int32_t token, char *buf, size_t cap);

#endif
