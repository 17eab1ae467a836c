"""What users tripped over (part of issue 18): safe writes, escaped page titles, --version,
hardware by library name, labels that say what they include."""

import os

import pytest
import yaml

from simsp.arguments import write_text
from simsp.cli import main
from simsp.errors import InputError


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "t.html"
    target.write_text("old")

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(InputError, match="cannot be written"):
        write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.html"]


def test_a_write_replaces_the_file_whole(tmp_path):
    target = tmp_path / "t.json"
    target.write_text("old")
    write_text(target, "new")
    assert target.read_text() == "new" and len(list(tmp_path.iterdir())) == 1


def test_a_workload_name_cannot_inject_script_into_the_page_title(tmp_path):
    data = yaml.safe_load(open("workloads/gpt-22b.yaml"))
    data["name"] = "</title><script>alert(1)</script>"
    data["training"]["global_batch"] = 8
    w = tmp_path / "evil.yaml"
    w.write_text(yaml.safe_dump(data))
    page = tmp_path / "t.html"
    assert main(["run", str(w), "--timeline", str(page)]) == 0
    text = page.read_text()
    head = text[: text.index("</head>")]
    assert "<title>simsp timeline: &lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in head
    assert "<script>alert(1)</script>" not in head


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        from simsp.cli import parser

        parser().parse_args(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("simsp ")


def test_hardware_by_library_name(capsys):
    assert main(["run", "workloads/gpt3-175b.yaml", "--hardware", "dgx-h100", "--json"]) == 0
    assert '"hardware": "dgx-h100"' in capsys.readouterr().out


def test_recompute_is_named_only_when_there_is_some(capsys):
    assert main(["run", "workloads/gpt-22b.yaml", "--recompute", "none"]) == 0
    assert "recompute included" not in capsys.readouterr().out
    assert main(["run", "workloads/gpt-22b.yaml"]) == 0
    assert "(selective recompute included)" in capsys.readouterr().out
