# SPDX-License-Identifier: Apache-2.0
"""test_cli_conventions.py — every verb of `servprof` follows the same conventions.

The verbs are read from `servprof --help` (generated from the dispatch table
in tool/cli/commands.h), so a verb added there is walked here with no change:
  - VERB --help / -h and `servprof help VERB`: the usage on stdout, status 0;
  - VERB --version: "servprof X.Y.Z", status 0;
  - an unknown option (--opt and --opt=value): ONE line on stderr naming it
    and the accepted options, status 2;
  - each option the usage lists as taking a value, given as --opt= (empty):
    one line naming the option, status 2 (the = form is parsed, not unknown);
  - each option listed with accepted values, given a bad one as --opt=BAD:
    one line naming the option and every accepted value, status 2;
  - each flag given a value (--flag=x): one line, status 2.
Plus the verb-specific cases the issue named (parse -i/-o, positional DIR,
--format=json, an output path that is a file).
"""

import os
import re
import subprocess
import tempfile
import unittest

BIN = os.environ["SERVPROF_BIN"]
SOURCE = os.environ["SERVPROF_SOURCE"]


def sp(*args, env=None, cwd=None):
    e = dict(os.environ)
    e.pop("SERVICE_PROF_CONFIG_PATH", None)
    e.update(env or {})
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=120, env=e,
                          cwd=cwd)


def verbs():
    out = sp("--help").stdout
    body = out.split("verbs:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in body.splitlines() if line.strip()]


# "  -o, --output-path=OUT        text (a, b)" -> (long, short, metavar, choices)
OPT_RE = re.compile(r"^  (?:-(\w), )?\s*--([a-z][a-z-]*)(?:=(\S+?)(?:\.\.\.)?)?\s{2,}(.*)$")


def options(verb):
    out = sp(verb, "--help").stdout
    if "\noptions:\n" not in out:
        raise AssertionError("servprof %s --help has no 'options:' section: print the usage with "
                             "cli_usage() from tool/cli/opts.h\n%s" % (verb, out))
    opts = []
    for line in out.split("\noptions:\n", 1)[1].splitlines():
        m = OPT_RE.match(line)
        if not m or m.group(2) in ("help", "version"):
            continue
        choices = None
        c = re.search(r"\(([^()]*)\)$", m.group(4))
        if c and m.group(3) and "," in c.group(1) and "default" not in c.group(1) \
                and ".." not in c.group(1):
            choices = [x.strip() for x in c.group(1).split(",")]
        opts.append((m.group(2), m.group(1), m.group(3), choices))
    return opts


class EveryVerb(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.verbs = verbs()
        with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
            cls.version = re.search(r"project\(servprof VERSION (\S+)", f.read()).group(1)

    def one_line_error(self, p, *needles):
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        lines = p.stderr.strip("\n").split("\n")
        self.assertEqual(len(lines), 1, "one line on stderr, got:\n" + p.stderr)
        for n in needles:
            self.assertIn(n, lines[0])
        self.assertEqual(p.stdout, "")

    def test_the_table_has_the_known_verbs(self):
        for v in ("parse", "config", "enable", "disable", "stress"):
            self.assertIn(v, self.verbs)

    def test_top_level(self):
        p = sp("--version")
        self.assertEqual((p.returncode, p.stdout), (0, "servprof %s\n" % self.version))
        p = sp("--help")
        self.assertEqual(p.returncode, 0)
        self.assertEqual(sp("help").stdout, p.stdout)
        self.assertEqual(sp().returncode, 2)
        self.one_line_error(sp("no-such-verb"), "no-such-verb", "parse")
        self.one_line_error(sp("--bogus"), "--bogus")
        self.one_line_error(sp("help", "no-such-verb"), "no-such-verb", "parse")

    def test_help(self):
        for v in self.verbs:
            with self.subTest(verb=v):
                p = sp(v, "--help")
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertTrue(p.stdout.startswith("usage: servprof %s" % v), p.stdout)
                self.assertEqual(p.stderr, "")
                self.assertEqual(sp(v, "-h").stdout, p.stdout)
                self.assertEqual(sp("help", v).stdout, p.stdout)
                self.assertIn("options:", p.stdout)
                # --help wins wherever it is, and never touches a file named --help.
                self.assertEqual(sp(v, "some-arg", "--help").stdout, p.stdout)

    def test_version(self):
        for v in self.verbs:
            with self.subTest(verb=v):
                p = sp(v, "--version")
                self.assertEqual((p.returncode, p.stdout), (0, "servprof %s\n" % self.version))

    def test_unknown_option(self):
        for v in self.verbs:
            with self.subTest(verb=v):
                self.one_line_error(sp(v, "--no-such-option"), "'--no-such-option'", "--help")
                self.one_line_error(sp(v, "--no-such-option=1"), "'--no-such-option'")
                self.one_line_error(sp(v, "-Z"), "'-Z'")

    def test_every_option_in_the_usage(self):
        for v in self.verbs:
            for name, short, metavar, choices in options(v):
                with self.subTest(verb=v, option=name):
                    if metavar:
                        # --opt= is parsed as the option (not unknown) and refused.
                        self.one_line_error(sp(v, "--%s=" % name), "--" + name, metavar)
                        if short:
                            self.one_line_error(sp(v, "-" + short), "-" + short, metavar)
                    else:
                        self.one_line_error(sp(v, "--%s=x" % name), "--" + name,
                                            "takes no value")
                    if choices:
                        p = sp(v, "--%s=not-a-choice" % name)
                        self.one_line_error(p, "--" + name, "not-a-choice", *choices)
                        p2 = sp(v, "--" + name, "not-a-choice")
                        self.assertEqual(p2.stderr, p.stderr)

    def test_numbers_are_checked(self):
        self.one_line_error(sp("stress", "--threads=0"), "--threads", "1 to 256")
        self.one_line_error(sp("stress", "-t", "x"), "-t", "1 to 256")
        self.one_line_error(sp("enable", "--wait=-1", "f.json"), "--wait", "0 to 60")


class Parse(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sp_cli_")

    def one_line_error(self, p, *needles):
        EveryVerb.one_line_error(self, p, *needles)

    def test_output_path_that_is_a_file(self):
        f = os.path.join(self.tmp, "out.txt")
        with open(f, "w") as fh:
            fh.write("keep")
        p = sp("parse", self.tmp, "-o", f)
        self.one_line_error(p, "--output-path", f, "is a file")
        self.assertNotIn("wrote", p.stdout + p.stderr)
        with open(f) as fh:
            self.assertEqual(fh.read(), "keep")

    def test_input_forms_agree(self):
        # No store in an empty folder: the same answer whichever way DIR is given.
        a = sp("parse", self.tmp, "-o", os.path.join(self.tmp, "o1"))
        b = sp("parse", "-i", self.tmp, "--output-path=" + os.path.join(self.tmp, "o1"))
        c = sp("parse", "--input-path", self.tmp, "-o" + os.path.join(self.tmp, "o1"))
        self.assertEqual(a.returncode, 1)
        self.assertEqual((b.returncode, b.stderr), (a.returncode, a.stderr))
        self.assertEqual((c.returncode, c.stderr), (a.returncode, a.stderr))
        self.assertIn("no raw store", a.stderr)
        self.one_line_error(sp("parse", self.tmp, "-i", self.tmp), "one input folder")
        self.one_line_error(sp("parse"), "input folder is missing")

    def test_list_options(self):
        # --format takes known values only, so DIR after it stays the input.
        p = sp("parse", "--format", "json", "db", self.tmp, "-o", os.path.join(self.tmp, "o"))
        self.assertIn("no raw store", p.stderr)
        p = sp("parse", "--format=json", "--format=csv", self.tmp)
        self.assertIn("no raw store", p.stderr)


class Config(unittest.TestCase):
    def test_config_usage(self):
        p = sp("config", "frobnicate", "x.json")
        EveryVerb.one_line_error(self, p, "'frobnicate'", "init", "check")
        EveryVerb.one_line_error(self, sp("config", "check"), "check needs FILE")
        EveryVerb.one_line_error(self, sp("config", "check", "--force", "x"), "--force")
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "c.json")
            self.assertEqual(sp("config", "init", "-f", f).returncode, 0)
            self.assertEqual(sp("config", "check", f).returncode, 0)
            # "--" ends the options: a file named like an option.
            p = sp("config", "check", "--", "--help")
            self.assertEqual(p.returncode, 1)
            self.assertIn("--help: error: the file does not exist", p.stdout)


if __name__ == "__main__":
    unittest.main()
