/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_html.c — writes the page: the template with its placeholders
 * replaced by the embedded assets and the data.
 *
 * The template (report.html) names what goes where: {{UPLOT_CSS}},
 * {{UPLOT_JS}}, {{UPLOT_LICENCE}}, {{APP_JS}}, {{DATA}}, {{TITLE}},
 * {{UPLOT_VERSION}}. Nothing is
 * fetched by the page: the library and the data are in the file, so it opens
 * offline from disk and can be attached to a ticket.
 *
 * The data is JSON inside <script type="application/json">. Inside a script
 * element the HTML parser looks for "</script" and "<!--", so every '<' of the
 * JSON is written as \u003c (it can only occur inside JSON strings, where the
 * escape means the same character). The file is written to PATH.partial and
 * renamed into place once complete: a full disk never leaves half a page.
 * A symlink is followed (the page goes where it points, the link stays); a
 * PATH that exists and is not a regular file (a FIFO, /dev/null) is written
 * in place, as a shell's `>` would: renaming over it would replace the node
 * with a plain file (sp_output_target, common/fsutil.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "report.h"

static void put_json_safe(FILE *f, const char *s)
{
    for (const char *p = s; *p;) {
        const char *lt = strchr(p, '<');
        size_t n = lt ? (size_t)(lt - p) : strlen(p);
        fwrite(p, 1, n, f);
        if (!lt)
            break;
        fputs("\\u003c", f);
        p = lt + 1;
    }
}

static void put_html_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* Writes one placeholder's value; returns -1 for an unknown name (a template
 * bug the tests catch). */
static int put_placeholder(FILE *f, const char *name, size_t len, const char *json, const json_t *data)
{
#define IS(lit) (len == sizeof lit - 1 && memcmp(name, lit, len) == 0)
    if (IS("UPLOT_CSS"))
        fputs(rpt_asset_uplot_css, f);
    else if (IS("UPLOT_JS"))
        fputs(rpt_asset_uplot_js, f);
    else if (IS("UPLOT_LICENCE"))
        fputs(rpt_asset_uplot_licence, f);
    else if (IS("UPLOT_VERSION"))
        fputs(rpt_asset_uplot_version, f);
    else if (IS("APP_JS"))
        fputs(rpt_asset_app_js, f);
    else if (IS("DATA"))
        put_json_safe(f, json);
    else if (IS("TITLE")) {
        const char *t = json_string_value(json_object_get(data, "title"));
        put_html_text(f, t ? t : "servprof report");
    } else
        return -1;
    return 0;
#undef IS
}

int rpt_html_write(const char *path, const json_t *data)
{
    char *json = json_dumps(data, JSON_COMPACT | JSON_REAL_PRECISION(9));
    if (!json) {
        fprintf(stderr, "servprof report: out of memory writing the page data\n");
        return -1;
    }
    char target[PATH_MAX];
    int how = sp_output_target(path, target, sizeof target);
    if (how < 0) {
        fprintf(stderr, "servprof report: cannot write %s: %s\n", path, strerror(-how));
        free(json);
        return -1;
    }
    char *tmp = NULL; /* NULL: written in place */
    if (how == SP_OUT_REPLACE) {
        size_t tlen = strlen(target);
        tmp = malloc(tlen + sizeof ".partial");
        if (!tmp) {
            free(json);
            return -1;
        }
        memcpy(tmp, target, tlen);
        memcpy(tmp + tlen, ".partial", sizeof ".partial");
    }
    /* The temp, in a folder others can write, is made anew (O_EXCL |
     * O_NOFOLLOW: never through a planted link); 0644 at most whatever the
     * umask (fopen would make 0666). */
    int fd = -1;
    if (tmp && !sp_output_name_trusted(tmp)) {
        if (unlink(tmp) == 0 || errno == ENOENT)
            fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    } else if (tmp) {
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    } else {
        fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    }
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f && fd >= 0)
        close(fd);
    if (!f) {
        fprintf(stderr, "servprof report: cannot write %s: %s\n", tmp ? tmp : target, strerror(errno));
        free(json);
        free(tmp);
        return -1;
    }
    int rc = 0;
    for (const char *p = rpt_asset_template; *p;) {
        const char *open = strstr(p, "{{");
        const char *close = open ? strstr(open + 2, "}}") : NULL;
        if (!close) {
            fputs(p, f);
            break;
        }
        fwrite(p, 1, (size_t)(open - p), f);
        if (put_placeholder(f, open + 2, (size_t)(close - open - 2), json, data) != 0) {
            fprintf(stderr, "servprof report: the page template has an unknown placeholder %.*s\n",
                    (int)(close - open + 2), open);
            rc = -1;
        }
        p = close + 2;
    }
    int err = ferror(f) ? errno : 0;
    if (fclose(f) != 0 && !err)
        err = errno ? errno : EIO;
    if (err || rc) {
        if (err)
            fprintf(stderr, "servprof report: writing %s failed: %s; no report written\n", path, strerror(err));
        if (tmp)
            unlink(tmp);
        rc = -1;
    } else if (tmp && rename(tmp, target) != 0) {
        fprintf(stderr, "servprof report: cannot rename %s to %s: %s\n", tmp, target, strerror(errno));
        unlink(tmp);
        rc = -1;
    }
    free(json);
    free(tmp);
    return rc;
}
