"""The command line: entry points, documented flags, colour and width."""
import json
import os
import re
import subprocess
import sys

import pytest

from numba_metal.tools.advisor.cli import build_parser
from numba_metal.tools.advisor.schema import KINDS

from advisor_paths import REPO, sample


def parser_flags() -> set[str]:
    flags = set()
    parser = build_parser()
    actions = list(parser._actions)
    for action in parser._actions:
        if hasattr(action, "choices") and isinstance(action.choices, dict):
            for sub in action.choices.values():
                actions.extend(sub._actions)
    for action in actions:
        flags.update(s for s in action.option_strings if s.startswith("--") and s != "--help")
    return flags


def documented_flags() -> set[str]:
    with open(os.path.join(REPO, "docs", "advisor.md"), encoding="utf-8") as fh:
        return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", fh.read()))


def test_every_documented_flag_exists_and_every_flag_is_documented():
    assert documented_flags() - {"--help"} == parser_flags()


def test_python_dash_m_entry_point():
    env = dict(os.environ, PYTHONPATH=REPO)
    out = subprocess.run([sys.executable, "-m", "numba_metal", "advisor", "schema", "scan"], env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0 and json.loads(out.stdout)["$id"] == "numba-metal-advisor/scan"


def test_main_dispatch_and_help(capsys):
    from numba_metal.tools.cli import main
    assert main(["--help"]) == 0 and "scan PATH" in capsys.readouterr().out
    assert main(["frobnicate"]) == 2
    assert main([]) == 2
    with pytest.raises(SystemExit) as e:
        main(["advisor", "scan", "--help"])
    assert e.value.code == 0 and "--no-compile-check" in capsys.readouterr().out


@pytest.mark.parametrize("kind", KINDS)
def test_schema_command(run_cli, kind):
    code, out, _ = run_cli("schema", kind)
    schema = json.loads(out)
    assert code == 0 and schema["$id"] == f"numba-metal-advisor/{kind}" and schema["type"] == "object"


COLOUR = re.compile(r"\x1b\[[0-9;]*(3[0-7]|9[0-7]|38;)[0-9;]*m")


def _scan_terminal(run_cli, monkeypatch, no_color_env: bool, *flags):
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich draws colour although stdout is not a terminal
    if no_color_env:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    return run_cli("scan", sample("scan_project"), "--no-compile-check", "--top", "2", *flags)[1]


def test_colour_only_when_allowed(run_cli, monkeypatch):
    assert COLOUR.search(_scan_terminal(run_cli, monkeypatch, False))
    assert not COLOUR.search(_scan_terminal(run_cli, monkeypatch, False, "--no-color"))
    assert not COLOUR.search(_scan_terminal(run_cli, monkeypatch, True))


@pytest.mark.parametrize("width", [60, 80, 120])
def test_width_is_respected(run_cli, width):
    code, out, _ = run_cli("scan", sample("scan_project"), "--no-compile-check", "--format", "text",
                           "--width", width)
    assert code == 0 and max(len(line) for line in out.splitlines()) <= width


def test_width_out_of_range(run_cli):
    with pytest.raises(SystemExit) as e:
        run_cli("scan", sample("scan_project"), "--width", "10")
    assert e.value.code == 2


def test_arguments_after_dashes_only_for_profile(run_cli):
    code, _, err = run_cli("scan", sample("scan_project"), "--", "x")
    assert code == 2 and "only for `profile" in err


def documented_exit_codes() -> list[tuple[int, str, str]]:
    """The rows of the table under docs/advisor.md's "Exit codes" heading."""
    with open(os.path.join(REPO, "docs", "advisor.md"), encoding="utf-8") as fh:
        section = fh.read().split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\d+)` \| `([a-z-]+)` \| (.+) \|$", section, re.M)
    return [(int(code), name, meaning) for code, name, meaning in rows]


def test_the_exit_code_table_is_the_one_the_docs_and_the_help_show():
    from numba_metal.tools.advisor.outcomes import EXIT_CODES
    assert documented_exit_codes() == [(row.code, row.name, row.meaning) for row in EXIT_CODES]
    help_text = " ".join(build_parser().format_help().split())
    for row in EXIT_CODES:
        assert f"{row.code} {row.name} {row.meaning}" in help_text, row
    assert len({row.code for row in EXIT_CODES}) == len(EXIT_CODES)


def test_an_internal_error_has_its_own_exit_code_and_a_traceback(run_cli, monkeypatch):
    from numba_metal.tools.advisor import scan
    from numba_metal.tools.advisor.outcomes import exit_code

    def broken(*args, **kwargs):
        raise KeyError("advisor bug")
    monkeypatch.setattr(scan, "scan", broken)
    code, _, err = run_cli("scan", sample("scan_project"))
    assert code == exit_code("internal-error") == 70
    assert "Traceback" in err and "KeyError: 'advisor bug'" in err and "bug in numba-metal advisor" in err
