"""`dlc explore`: the page's data (every stage, every changed pass's diff, every op in the
graph, the links ONNX node -> dlc ops -> linalg ops -> schedule), the command line, and the page
loaded in a real headless browser (Debian's chromium; skipped where there is none)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dlc.passes import STAGES, parse_pipeline, stage_pipelines
from dlc.tools import explore
from dlc.tools.dlc_cli import main as dlc_main

from .explore_model import small_cnn


@pytest.fixture(scope="module", autouse=True)
def _direct_convs():
    """The direct conv schedules are what these tests check: no Winograd (dlc-winograd), for
    the module's fixtures too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DLC_WINOGRAD", "0")
        yield


CHROMIUM = next((p for p in (os.environ.get("DLC_CHROMIUM"), shutil.which("chromium"),
                             shutil.which("chromium-browser"), shutil.which("google-chrome"))
                 if p), None)


@pytest.fixture(scope="module")
def data() -> dict:
    return explore.collect(small_cnn(), profile=True, runs=2)


@pytest.fixture(scope="module")
def page(tmp_path_factory, data) -> Path:
    path = tmp_path_factory.mktemp("explore") / "small.html"
    path.write_text(explore.render(data))
    return path


def embedded(html: str) -> dict:
    blob = re.search(r'<script type="application/json" id="dlc-data">(.*?)</script>', html,
                     re.DOTALL)
    return json.loads(blob[1])


def test_every_stage_and_pass(data):
    assert [s["name"] for s in data["stages"]] == ["import", *STAGES]
    expected = [(stage, e.text() if e.children is not None else e.name)
                for stage, text in stage_pipelines(2).items() for e in parse_pipeline(text)]
    assert [(p["stage"], p["name"]) for p in data["passes"]] == expected
    assert all(p["seconds"] >= 0 for p in data["passes"])
    changed = {p["name"]: p["diff"] for p in data["passes"] if p["diff"]}
    # the batchnorm folds into the conv; lowering changes everything; dlc-verify changes nothing
    assert "dlc-fuse-batchnorm" in changed and "dlc-to-linalg" in changed
    text = explore.unpack(changed["dlc-to-linalg"])
    assert text.startswith("--- before dlc-to-linalg") and "+++ after dlc-to-linalg" in text
    assert changed["dlc-to-linalg"]["added"] == text.count("\n+") - 1  # (not the +++ line)
    assert not next(p for p in data["passes"] if p["name"] == "dlc-verify")["diff"]
    # elided constants: the page holds no weights
    assert "dense_resource<__elided__>" in explore.unpack(data["stages"][0])


def test_graph_has_every_op_with_names_and_types(data):
    nodes, edges = data["graph"]["nodes"], data["graph"]["edges"]
    dlc_ir = explore.unpack(next(s for s in data["stages"] if s["name"] == "dlc"))
    ops_in_ir = len(re.findall(r'^\s+(?:%\S+ = )?"?(?:dlc\.\w+|return)', dlc_ir,
                               re.MULTILINE))
    assert len(nodes) == ops_in_ir + 1  # + the input
    convs = [n for n in nodes if n["op"] == "conv_nhwc"]
    assert [c["names"] for c in convs] == [["/stem/conv/Conv"],  # (its BatchNorm folded in)
                                           ["/block1/conv/Conv"]]
    assert convs[1]["types"] == ["tensor<1x32x32x16xf32>"] and convs[1]["group"] == "/block1"
    assert all(0 <= a < len(nodes) and 0 <= b < len(nodes) for a, b in edges)
    add = next(i for i, n in enumerate(nodes) if n["op"] == "add")
    assert len([a for a, b in edges if b == add]) == 2  # the residual add's two operands


def test_links_to_linalg_ops_and_schedules(data):
    by_name = [op for op in data["linalg"] if "/block1/conv/Conv" in op["names"]]
    conv = next(op for op in by_name if op["op"].startswith("linalg.conv"))
    assert conv["schedule"]["family"] == "conv" and "oh=32" in conv["schedule"]["problem"]


def test_profile_times(data):
    names = {name for node in data["graph"]["nodes"] for name in node["names"]}
    assert set(data["op_times"]) <= names and "/block1/conv/Conv" in data["op_times"]
    assert all(t >= 0 for t in data["op_times"].values())
    conv = next(o for o in data["profile"]["ops"] if "/block1/conv/Conv" in o["nodes"])
    assert conv["family"] == "conv"


def test_page_is_self_contained(page, data):
    html = page.read_text()
    assert not re.search(r'<(?:script|link|img)[^>]+(?:src|href)=', html)  # nothing fetched
    assert "dagre" in html and embedded(html)["graph"] == json.loads(json.dumps(data["graph"]))


def test_command_line(tmp_path, capsys):
    model = tmp_path / "small.onnx"
    model.write_bytes(small_cnn().SerializeToString())
    out = tmp_path / "page.html"
    assert dlc_main(["explore", str(model), "-O", "1", "-o", str(out), "--no-profile"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert embedded(out.read_text())["opt_level"] == 1
    assert embedded(out.read_text())["profile"] is None


needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium found (apt-get install chromium, or set "
    "DLC_CHROMIUM): the page is not loaded in a browser")


def load_in_chromium(page: Path, fragment: str, profile: Path) -> str:
    """The page's DOM after its script ran, in headless chromium."""
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--window-size=1400,850", f"--user-data-dir={profile}",
             "--virtual-time-budget=10000"]  # (time for the diff's async inflate)
    return subprocess.run([*flags, "--dump-dom", page.as_uri() + fragment],
                          capture_output=True, text=True, timeout=300, check=True).stdout


def check_dom(dom: str, data: dict) -> None:
    """Built by the script: one SVG node per op, all edges, every stage and pass diff."""
    assert 'data-ready="1"' in dom  # the script ran to its end
    drawn = re.findall(r'<g class="node[^"]*" id="n(\d+)"', dom)
    assert sorted(map(int, drawn)) == list(range(len(data["graph"]["nodes"])))  # one per op
    assert dom.count('class="edge"') == len(data["graph"]["edges"])
    assert len(re.findall(r'<details class="stage"', dom)) == len(data["stages"])
    changed = [p for p in data["passes"] if p["diff"]]
    assert len(re.findall(r'<details class="pass"', dom)) == len(changed)


@needs_chromium
def test_page_in_headless_chromium(page, data, tmp_path):
    fragment = "#select=/block1/conv/Conv&open=dlc-to-linalg&open=linalg"
    dom = load_in_chromium(page, fragment, tmp_path / "profile")
    check_dom(dom, data)
    assert dom.count('class="cluster"') >= 3  # /stem, /block1, /head
    # the opened diff, inflated and coloured; the opened stage's IR, highlighted and foldable
    assert '<pre class="diff" data-ready="1">' in dom and 'class="d-add"' in dom
    assert 'class="fold"' in dom and '<span class="k-op">linalg.' in dom
    # the selected node's links: its linalg ops and their schedule in the side panel
    assert "linalg.conv_2d_nhwc_hwcf" in dom and "schedule: conv Conv(" in dom
    assert re.search(r'<div class="time">[\d.]+ ms per run \(', dom)  # the profiled time
    shot = tmp_path / "explore.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                    "--window-size=1400,850", f"--user-data-dir={tmp_path / 'profile'}",
                    f"--screenshot={shot}", page.as_uri() + fragment],
                   capture_output=True, timeout=120, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


@needs_chromium
def test_resnet50_page_in_headless_chromium(tmp_path):
    """The acceptance model: ResNet-50 (light model zoo, random weights), ~15 s + the load."""
    from benchmarks.light_models import light_model

    data = explore.collect(light_model("resnet50", tmp_path))
    assert len(data["graph"]["nodes"]) > 200 and len(data["linalg"]) > 100
    page = tmp_path / "resnet50.html"
    page.write_text(explore.render(data))
    check_dom(load_in_chromium(page, "#open=linalg", tmp_path / "profile"), data)


def test_diff_without_gnu_diff(monkeypatch):
    before, after = "a\nb\nc\nd", "a\nB\nc\nd\ne"
    with_diff = explore._diff(before, after, "p")
    monkeypatch.setattr(explore.shutil, "which", lambda _: None)  # difflib's path
    with_difflib = explore._diff(before, after, "p")
    assert explore.unpack(with_diff) == explore.unpack(with_difflib)
    assert (with_diff["added"], with_diff["removed"]) == (2, 1)
    assert explore._diff(before, before, "p") is None


def test_serve_on_localhost(page):
    import threading
    import urllib.request

    server = explore.make_server(page.read_text(), port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert server.server_address[0] == "127.0.0.1"
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.read().decode() == page.read_text()
    finally:
        server.shutdown()
        server.server_close()
