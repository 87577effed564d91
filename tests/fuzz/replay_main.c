/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay_main.c — runs a fuzz target's LLVMFuzzerTestOneInput once on each
 * file of the folders (or files) named on the command line, for builds
 * without libFuzzer (gcc): the seed corpus, crash inputs included, becomes
 * a regression test in every build. Exit status 0 when every input ran (a
 * crash or a sanitizer report ends the process with its own status), 1
 * when no input could be read.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    return 1;
}

int main(int argc, char **argv)
{
    int ran = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0)
            continue;
        if (!S_ISDIR(st.st_mode)) {
            ran += run_file(argv[i]);
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            ran += run_file(path);
        }
        if (d)
            closedir(d);
    }
    fprintf(stderr, "%d input(s) replayed\n", ran);
    return ran ? 0 : 1;
}
