/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fork.c — a fork while the sampler thread runs: the child forgets the
 * parent's thread (stopping must not try to join it), starts samplers of
 * its own that work, and the parent's sampler is undisturbed.
 */
#include <sys/wait.h>

#include "check.h"
#include "smp_util.h"

int main(void)
{
    char dir[256];
    sp_config c;
    sp_session s;
    smp_tmpdir(dir, sizeof dir, "fork");
    smp_setup(&c, &s, dir);
    c.host_system_usage_freq = 20;
    sp_samplers_set_observer(obs_fn, NULL);
    sp_samplers_start(&s, &c);
    CHECK(obs_wait("MemUsage", 0, 2) >= 2); /* the sampler thread runs when the fork comes */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* what the runtime's atfork child handler does (idempotent) */
        sp_samplers_atfork_child();
        sp_samplers_stop(); /* nothing to join: must return at once */
        /* TSan cannot start threads in the child of a threaded process */
        const char *san = getenv("SERVPROF_SANITIZE");
        if (san && !strcmp(san, "thread"))
            _exit(0);
        obs_reset();
        sp_samplers_start(&s, &c);
        obs_wait("MemUsage", 0, 3); /* its own sampler's passes */
        sp_samplers_stop();
        int n = obs_count("MemUsage", 0), p = obs_count("ProcessUsage", 0);
        fprintf(stderr, "child: %d host passes\n", n);
        _exit(n >= 3 && p >= n - 1 ? 0 : 1);
    }
    CHECK(pid > 0);
    int before = obs_count("MemUsage", 0);
    int reached = obs_wait("MemUsage", 0, before + 3); /* the parent's sampler goes on */
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    sp_samplers_stop();
    sp_samplers_set_observer(NULL, NULL);
    int after = obs_count("MemUsage", 0);
    fprintf(stderr, "parent: %d host passes at the fork, %d at stop\n", before, after);
    CHECK(reached >= before + 3);
    CHECK(after >= reached);
    CHECK_DONE();
}
