/* report_ops.c — placeholder until the device-activity reports are written
 * (issue 7). */
#include "report_ops.h"
int sp_report_ops(const char *const *activity_paths, int n, const char *out_dir)
{
    (void)activity_paths; (void)n; (void)out_dir;
    return 0;
}
