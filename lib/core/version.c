/* SPDX-License-Identifier: Apache-2.0 */
/*
 * version.c — servprof_version(): which library is loaded at run time.
 * The numbers come from the generated servprof_version.h (project(VERSION)
 * in CMakeLists.txt), so they match the header this library was built with;
 * a program compares them with the SERVPROF_VERSION_* of its own header.
 */
#include "servprof.h"

SERVPROF_API unsigned servprof_version(void)
{
    return SERVPROF_VERSION_HEX;
}

SERVPROF_API const char *servprof_version_string(void)
{
    return SERVPROF_VERSION;
}
