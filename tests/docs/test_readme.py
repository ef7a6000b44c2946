"""The README is a guide that works: its quickstart comes first and stays short, every shell command
in it names a real make target, script, command and option, its cheap commands run, its quickstart
Python runs (train, prove, retrain, prove again) and its links lead to files.

Run: ONNXPROOF_ENGINE=build/bin/onnxproof PYTHONPATH=python .venv/bin/python -m unittest tests.docs.test_readme
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ENGINE = os.environ.get("ONNXPROOF_ENGINE", os.path.join(ROOT, "build", "bin", "onnxproof"))
# Pages that parallel branches add to docs/; a link to one is checked once it is there.
PENDING_PAGES = set()


def readme():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        return handle.read()


def blocks(language):
    return re.findall(r"^```" + language + r"\n(.*?)^```", readme(), re.S | re.M)


def shell_commands():
    """Every command of the README's sh blocks, comments stripped."""
    commands = []
    for block in blocks("sh"):
        for line in block.splitlines():
            command = line.split("  #")[0].split(" # ")[0].strip()
            if command:
                commands.append(command)
    return commands


def engine(*arguments):
    return subprocess.run([ENGINE, *arguments], capture_output=True, text=True, timeout=120)


class Structure(unittest.TestCase):
    def test_the_quickstart_is_the_first_section_and_under_60_lines(self):
        sections = re.findall(r"^## (.*)$", readme(), re.M)
        self.assertEqual(sections[0], "Quickstart")
        quickstart = readme().split("## Quickstart\n", 1)[1].split("\n## ", 1)[0]
        self.assertLess(len(quickstart.splitlines()), 60)

    def test_every_relative_link_leads_to_a_file(self):
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme()):
            if "://" in target or target in PENDING_PAGES:
                continue
            self.assertTrue(os.path.exists(os.path.join(ROOT, target)), target)


class ShellCommands(unittest.TestCase):
    def test_make_targets_and_scripts_exist(self):
        with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as handle:
            targets = set(re.findall(r"^([a-z-]+):", handle.read(), re.M))
        seen = 0
        for command in shell_commands():
            words = shlex.split(command)
            if words[0] == "make":
                self.assertIn(words[1], targets, command)
                seen += 1
            elif words[0].startswith("scripts/"):
                self.assertTrue(os.access(os.path.join(ROOT, words[0]), os.X_OK), command)
                seen += 1
        self.assertGreaterEqual(seen, 3)

    def test_pip_installs_name_the_wheel_and_its_real_extras(self):
        with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as handle:
            extras = set(re.findall(r"^(\w+) = \[", handle.read().split("[project.optional-dependencies]")[1], re.M))
        for extra in re.findall(r"onnxproof\[(\w+)\]", readme()):
            self.assertIn(extra, extras)
        self.assertTrue([c for c in shell_commands() if c.startswith(("pip install dist/onnxproof-",
                                                                      "pip install 'dist/onnxproof-"))])
        for extra in re.findall(r"\.whl\[(\w+)\]", readme()):
            self.assertIn(extra, extras)

    def test_every_onnxproof_command_and_option_is_real(self):
        commands = [shlex.split(c) for c in shell_commands() if c.startswith("onnxproof ")]
        self.assertGreaterEqual(len(commands), 2)
        for words in commands:
            subcommand = words[1]
            helped = engine(subcommand, "--help")
            self.assertEqual(helped.returncode, 0, helped.stderr)
            for option in (w.split("=")[0] for w in words[2:] if w.startswith("--")):
                self.assertIn(option, helped.stdout, f"{' '.join(words)}: {option}")

    def test_the_help_lists_pipeline_first_with_examples(self):
        helped = engine("--help")
        self.assertEqual(helped.returncode, 0)
        listed = re.findall(r"^  (\w+)\s", re.split(r"(?i)subcommands:", helped.stdout)[-1], re.M)
        self.assertEqual(listed[0], "pipeline", helped.stdout)
        self.assertIn("onnxproof pipeline --model torchvision:resnet18", helped.stdout)


class QuickstartPython(unittest.TestCase):
    def test_the_quickstart_trains_proves_retrains_and_proves_again(self):
        script = blocks("python")[0]
        with tempfile.TemporaryDirectory(prefix="onnxproof-readme-") as folder:
            environment = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), ONNXPROOF_ENGINE=ENGINE)
            run = subprocess.run([sys.executable, "-c", script], cwd=folder, env=environment, capture_output=True,
                                 text=True, timeout=600)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            folders = sorted(os.listdir(os.path.join(folder, "onnxproof-out")))
            golden = [name for name in folders if os.path.exists(os.path.join(folder, "onnxproof-out", name, "golden"))]
        self.assertIn("Sequential: pass", run.stdout, run.stdout)
        self.assertEqual(run.stdout.strip().splitlines()[-1], "pass", run.stdout)
        self.assertNotIn("GOLDEN_DRIFT", run.stdout + run.stderr)
        # Two weights, two run folders (onnxproof-out/Sequential-<hash>), nothing frozen.
        self.assertEqual(len(folders), 2, folders)
        self.assertTrue(all(re.fullmatch(r"Sequential-[0-9a-f]{8}", name) for name in folders), folders)
        self.assertEqual(golden, [])


if __name__ == "__main__":
    unittest.main()
