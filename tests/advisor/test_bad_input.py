"""The advisor's bad-input corpus (corpus.py): every entry gets its documented outcome, promptly, and
costs nothing else: a scan keeps every other file's results (issue 17, item 9)."""
import os
import re
import threading

import pytest

from numba_metal.tools.advisor import scan
from numba_metal.tools.advisor.console import render_to_text
from numba_metal.tools.advisor.schema import SCAN_ERROR_REASONS, validate

import corpus

TIMEOUT_S = 120


def within_timeout(fn, *args):
    box = {}

    def target():
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(TIMEOUT_S)
    assert not t.is_alive(), f"hung for more than {TIMEOUT_S} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


@pytest.mark.parametrize("bad", corpus.SCAN, ids=lambda b: b.id)
def test_a_bad_file_is_reported_and_the_rest_of_the_scan_is_kept(bad, tmp_path):
    (tmp_path / "a_good.py").write_text(corpus.LOOP)
    (tmp_path / "z_good.py").write_text(corpus.LOOP.replace("kept", "kept_too"))
    name = bad.make(str(tmp_path))
    doc = within_timeout(scan.scan, str(tmp_path))
    validate(doc)
    errors = [e for e in doc["errors"] if e["file"] == name]
    assert len(errors) == 1 and len(doc["errors"]) == 1, doc["errors"]
    (err,) = errors
    assert err["reason"] == bad.reason and re.search(bad.match, err["message"]), err
    assert err["line"] == bad.line
    found = {(c["file"], c["qualname"]) for c in doc["candidates"]}
    assert {("a_good.py", "kept"), ("z_good.py", "kept_too")} <= found
    if bad.id == "deep_expression_in_a_function":
        assert (name, "other") in found  # the file's other function
    text = render_to_text(scan.render, doc, 80)
    assert name in text and "\x1b" not in text


def test_the_corpus_covers_every_reason():
    assert {b.reason for b in corpus.SCAN} == set(SCAN_ERROR_REASONS)


def test_the_docs_give_every_reason_and_limit():
    from advisor_paths import REPO
    from numba_metal.tools.advisor.compat import MAX_CHECKED_NODES
    from numba_metal.tools.advisor.sourcefile import MAX_FILE_BYTES
    with open(os.path.join(REPO, "docs", "advisor.md"), encoding="utf-8") as fh:
        text = fh.read()
    assert re.findall(r"^\| `([a-z-]+)` \| ", text.split("| reason | what |")[1].split("\n\n")[0], re.M) == \
        list(SCAN_ERROR_REASONS)
    assert f"larger than {MAX_FILE_BYTES // 2**20} MiB" in text and f"{MAX_CHECKED_NODES:,} syntax-tree nodes" in text


def test_a_scanned_path_that_is_not_a_file_or_directory_is_a_usage_error(run_cli, tmp_path):
    os.mkfifo(tmp_path / "fifo.py")
    code, _, err = within_timeout(run_cli, "scan", tmp_path / "fifo.py")
    assert code == 2 and "a FIFO, not a file or directory to scan" in err
    code, _, err = run_cli("scan", tmp_path / "missing")
    assert code == 2 and "No such file" in err


def test_a_scanned_file_given_directly_is_read_with_the_same_care(run_json, tmp_path):
    (tmp_path / "deep.py").write_text("x = " + "+".join(["1"] * 30000) + "\n")
    code, doc, _ = run_json("scan", tmp_path / "deep.py")
    assert code == 0 and [e["reason"] for e in doc["errors"]] == ["too-complex"]


def test_an_elif_chain_longer_than_the_recursion_limit_is_analysed(tmp_path):
    chain = "if x == 0:\n    pass\n" + "".join(f"elif x == {i}:\n    pass\n" for i in range(1, 1500))
    (tmp_path / "chain.py").write_text(chain + "else:\n" + "".join("    " + ln + "\n" for ln in corpus.LOOP.splitlines()))
    doc = scan.scan(str(tmp_path))
    assert doc["errors"] == [] and [c["qualname"] for c in doc["candidates"]] == ["kept"]


def test_file_names_cannot_drive_the_terminal(run_cli, tmp_path):
    """Control characters and undecodable bytes in file names are printed escaped."""
    os.mkdir(tmp_path / "p")
    for raw in (b"\x1b[2Jclear.py", b"\xff\xfe.py", b"bell\x07.py"):
        with open(os.path.join(os.fsencode(tmp_path / "p"), raw), "w") as fh:
            fh.write(corpus.LOOP)
    code, out, _ = run_cli("scan", tmp_path / "p", "--format", "text", "--no-compile-check")
    assert code == 0 and "\x1b" not in out and "\x07" not in out
    assert "\\x1b[2Jclear.py:1" in out and "\\xff\\xfe.py:1" in out and "bell\\x07.py:1" in out
    code, out, _ = run_cli("scan", tmp_path / "p", "--format", "json", "--no-compile-check")
    assert code == 0 and out.isascii()


@pytest.mark.parametrize("bad", corpus.DOCUMENTS, ids=lambda b: b.id)
def test_report_refuses_a_bad_document_with_a_usage_error(bad, run_cli, tmp_path):
    name = bad.make(str(tmp_path))
    code, out, err = within_timeout(run_cli, "report", tmp_path / name)
    assert code == 2 and out == "" and re.search(bad.match, err), err
    assert "Traceback" not in err


QUICK = ("--warmup", "2", "--repeats", "2", "--steady-batches", "2", "--steady-calls", "1")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("bad", corpus.COMPARE, ids=lambda b: b.id)
def test_each_way_a_workload_fails_has_its_exit_code_and_message(bad, run_cli, tmp_path, monkeypatch):
    from numba_metal.tools.advisor.outcomes import exit_code
    monkeypatch.setenv("ADVISOR_TEST_DIR", str(tmp_path))
    script = tmp_path / f"{bad.id}.py"
    script.write_text(bad.src)
    code, out, err = within_timeout(run_cli, "compare", script, *QUICK, *bad.args, "--format", "json")
    assert code == exit_code(bad.exit), err[-3000:]
    assert out == "", "a command that stops prints no report"
    message = err[err.index("numba-metal advisor compare: error:"):]
    assert re.search(bad.match, message, re.S), message
    if bad.exit == "workload-failed" and "raised" in bad.match:
        assert "Traceback (most recent call last)" in message
    pid_file = tmp_path / "child.pid"
    if pid_file.exists():  # what the workload started is stopped with it
        assert not _alive(int(pid_file.read_text()))


def test_compare_still_works_after_a_workload_failed(run_json):
    from advisor_paths import sample
    code, doc, _ = run_json("compare", sample("compare", "mismatch.py"))
    assert code == 1 and doc["correctness"]["status"] == "fail"


def test_profile_and_compare_refuse_a_script_they_cannot_read_or_parse(run_cli, tmp_path):
    from numba_metal.tools.advisor.outcomes import exit_code
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    for command in ("compare", "profile"):
        code, _, err = within_timeout(run_cli, command, tmp_path / "fifo.py")
        assert code == exit_code("usage") and "not a regular file (a FIFO)" in err
        code, _, err = run_cli(command, tmp_path / "broken.py")
        assert code == exit_code("syntax-error") and "broken.py:1:7: syntax error" in err and "nothing was run" in err


def test_a_workload_process_that_never_started_is_not_blamed_on_the_workload(run_cli, tmp_path, monkeypatch):
    """If the advisor's own process cannot start (here: a Python that exits at once), that is an
    internal error, not 'the workload exited'."""
    from numba_metal.tools.advisor.outcomes import exit_code
    monkeypatch.setenv("ADVISOR_TEST_DIR", str(tmp_path))
    script = tmp_path / "fine.py"
    script.write_text(corpus.workload())
    monkeypatch.setattr("sys.executable", "/bin/false")
    code, _, err = run_cli("compare", script)
    assert code == exit_code("internal-error") and "before starting the workload" in err
