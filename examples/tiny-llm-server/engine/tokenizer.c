/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tokenizer.c — word-level toy tokenizer (see tokenizer.h).
 *
 * Tokenizing hashes each whitespace-separated word (FNV-1a) into the
 * vocabulary; detokenizing spells a token id as consonant-vowel syllables
 * so that streamed output looks like words. The two are not inverses:
 * nothing downstream needs them to be.
 */
#include "tokenizer.h"

#include <stdio.h>

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

int tl_tokenize(const char *text, size_t len, int vocab, int32_t *out, int cap)
{
    int n = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && is_space(text[i]))
            i++;
        if (i >= len)
            break;
        uint32_t h = 2166136261u;
        while (i < len && !is_space(text[i])) {
            h ^= (unsigned char)text[i++];
            h *= 16777619u;
        }
        if (n < cap)
            out[n] = (int32_t)(h % (uint32_t)vocab);
        n++;
    }
    return n;
}

int tl_detokenize(int32_t token, char *buf, size_t cap)
{
    static const char cons[] = "bdfgklmnprstvz"; /* 14 */
    static const char vow[] = "aeiou";          /* 5  */
    char w[TL_TOKEN_TEXT_MAX];
    int k = 0;
    uint32_t t = (uint32_t)token;
    w[k++] = ' ';
    do { /* one syllable per 70 values: at most 6 syllables for 32 bits */
        w[k++] = cons[t % 14];
        t /= 14;
        w[k++] = vow[t % 5];
        t /= 5;
    } while (t && k < TL_TOKEN_TEXT_MAX - 2);
    w[k] = 0;
    return snprintf(buf, cap, "%s", w) >= (int)cap ? (int)cap - 1 : k;
}
