/* SPDX-License-Identifier: Apache-2.0 */
/*
 * render.h — the analyze document (analyze.h) as text tables and CSV.
 */
#ifndef SERVPROF_ANALYZE_RENDER_H
#define SERVPROF_ANALYZE_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* The terminal report: headline, findings, latency, windows, summaries. */
void sa_render_text(json_t *doc, FILE *f);
/* The findings alone (what demo.sh prints). */
void sa_render_findings(json_t *doc, FILE *f);
/* The reference's three summaries and the findings, as CSV sections. */
void sa_render_csv(json_t *doc, FILE *f);
/* Writes request_summary.csv, batch_summary.csv, service_summary.csv,
 * findings.csv, windows.csv, ttft_breakdown.csv and analyze.json into dir
 * (created). 0, or -1 with the reason in err. */
int sa_render_files(json_t *doc, const char *dir, char *err, size_t errcap);
/* s as one CSV field (RFC 4180): as it is, or quoted with its quotes doubled
 * when it holds a comma, a quote or a line break; nothing for NULL. */
void sa_csv_str(FILE *f, const char *s);

#endif
