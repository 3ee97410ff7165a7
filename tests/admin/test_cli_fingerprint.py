"""``fptrack fingerprint``: summary and JSON output, encodings, HTML, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from admin.cli import main
from fingerprint.document import fingerprint_document
from tests.support.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "works" / "sanguo-01.txt"
METHODS = {"pinyin", "pinyin-anchored", "simhash", "minhash", "winnow", "sentences"}

SIMPLIFIED = (
    "话说天下大势，分久必合，合久必分。周末七国分争，并入于秦。及秦灭之后，楚、汉分争，"
    "又并入于汉。汉朝自高祖斩白蛇而起义，一统天下，后来光武中兴，传至献帝，遂分为三国。"
)
TRADITIONAL = (
    "話說天下大勢，分久必合，合久必分。周末七國分爭，並入於秦。及秦滅之後，楚、漢分爭，"
    "又並入於漢。漢朝自高祖斬白蛇而起義，一統天下，後來光武中興，傳至獻帝，遂分為三國。"
)


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["fingerprint", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def run_json(capsys, path: Path) -> dict:
    status, out, err = run(capsys, "--json", path)
    assert (status, err) == (0, "")
    return json.loads(out)


def assert_one_line_error(err: str) -> None:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fptrack: error: ")
    assert "Traceback" not in err


class TestOutput:
    def test_summary_of_the_sample(self, capsys):
        status, out, err = run(capsys, SAMPLE)
        assert (status, err) == (0, "")
        text = SAMPLE.read_text(encoding="utf-8")
        fp = fingerprint_document(text)
        fields = {}
        for line in out.splitlines():
            if not line.startswith(" "):  # labels fill a column of 18 characters
                fields[line[:18].strip()] = line[18:].strip()
        assert fields["file"] == str(SAMPLE)
        assert fields["encoding"] == "utf-8"
        assert fields["characters"].startswith(f"{len(text)} ({len(fp.normalized.text)} after")
        assert fields["simhash"] == fp.simhash.to_hex()
        assert fields["minhash"].startswith(f"128 values over {fp.minhash.size} 3-grams (oph)")
        assert fields["minhash"].endswith(fp.minhash.to_hex()[:32] + "...")
        assert fields["pinyin windows"].startswith(f"{len(fp.pinyin)} windows")
        assert fields["pinyin anchored"].startswith(f"{len(fp.pinyin_anchored)} windows")
        assert fields["winnowed 8-grams"] == str(len(fp.winnow))
        assert fields["longest sentences"] == str(len(fp.sentences.spans)) == "5"
        quotes = [line.strip() for line in out.splitlines() if line.startswith("  ")]
        assert len(quotes) == 5
        for quote in quotes:
            assert quote in text  # evidence is quoted from the original file

    def test_json_output(self, capsys):
        result = run_json(capsys, SAMPLE)
        assert set(result) == {"file", "encoding", "chars", "normalized_chars", "fingerprints"}
        assert result["encoding"] == "utf-8"
        text = SAMPLE.read_text(encoding="utf-8")
        assert result["chars"] == len(text)
        assert set(result["fingerprints"]) == METHODS
        assert result["fingerprints"] == fingerprint_document(text).to_dict()

    def test_gbk_file(self, capsys, tmp_path):
        utf8 = tmp_path / "a.txt"
        utf8.write_text(SIMPLIFIED, encoding="utf-8")
        gbk = tmp_path / "b.txt"
        gbk.write_bytes(SIMPLIFIED.encode("gbk"))
        a, b = run_json(capsys, utf8), run_json(capsys, gbk)
        assert b["encoding"] == "gb18030"
        assert b["chars"] == len(SIMPLIFIED)
        assert b["fingerprints"] == a["fingerprints"]

    def test_big5_file(self, capsys, tmp_path):
        big5 = tmp_path / "trad.txt"
        big5.write_bytes(TRADITIONAL.encode("big5"))
        result = run_json(capsys, big5)
        assert result["encoding"] == "big5hkscs"
        assert result["chars"] == len(TRADITIONAL)
        # Traditional normalises to Simplified: the same fingerprints as the Simplified text
        assert result["fingerprints"] == fingerprint_document(SIMPLIFIED).to_dict()

    def test_html_file_skips_scripts_and_styles(self, capsys, tmp_path):
        secret = "脚本里的秘密文字绝不能进入指纹"
        page = tmp_path / "page.html"
        page.write_text(
            "<!DOCTYPE html><html><head><title>三国</title>"
            f"<style>body {{ font: '{secret}'; }}</style>"
            f"<script>var s = '{secret}'; document.write(s);</script></head>"
            f"<body><p>{SIMPLIFIED[:34]}</p><div>{SIMPLIFIED[34:]}</div>"
            f"<noscript>{secret}</noscript></body></html>",
            encoding="utf-8",
        )
        result = run_json(capsys, page)
        expected = fingerprint_document(f"三国\n{SIMPLIFIED[:34]}\n{SIMPLIFIED[34:]}")
        assert result["normalized_chars"] == len(expected.normalized.text)
        assert result["fingerprints"] == expected.to_dict()
        status, out, _ = run(capsys, page)
        assert status == 0
        assert "秘密" not in out

    def test_from_another_directory(self, tmp_path):
        """The path is read as given, whatever the working directory (``python -m
        admin.cli`` in a fresh process: ``test_cli_process``)."""
        ran = run_cli("fingerprint", "--json", str(SAMPLE), cwd=tmp_path)
        assert ran.status == 0, ran.err
        result = json.loads(ran.out)
        text = SAMPLE.read_text(encoding="utf-8")
        assert result["fingerprints"] == fingerprint_document(text).to_dict()


class TestErrors:
    def test_missing_file(self, capsys, tmp_path):
        status, out, err = run(capsys, tmp_path / "nope.txt")
        assert status == 2
        assert out == ""
        assert_one_line_error(err)
        assert "nope.txt" in err

    def test_directory(self, capsys, tmp_path):
        status, out, err = run(capsys, tmp_path)
        assert status == 2
        assert out == ""
        assert_one_line_error(err)
        assert "directory" in err

    def test_binary_file(self, capsys, tmp_path):
        binary = tmp_path / "image.png"
        binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00")
        status, out, err = run(capsys, binary)
        assert status != 0
        assert out == ""
        assert_one_line_error(err)
        assert "binary" in err and "image.png" in err

    def test_max_bytes_exceeded(self, capsys, tmp_path):
        path = tmp_path / "big.txt"
        path.write_text(SIMPLIFIED, encoding="utf-8")
        size = path.stat().st_size
        status, out, err = run(capsys, "--max-bytes", size - 1, path)
        assert status != 0
        assert out == ""
        assert_one_line_error(err)
        assert "--max-bytes" in err and str(size) in err
        status, _, _ = run(capsys, "--max-bytes", size, path)
        assert status == 0

    @pytest.mark.parametrize("content", [b"", b"  \n\t\n", "，。！".encode()])
    def test_file_without_content(self, capsys, tmp_path, content):
        path = tmp_path / "blank.txt"
        path.write_bytes(content)
        status, out, err = run(capsys, "--json", path)
        if status == 0:
            result = json.loads(out)
            assert result["fingerprints"]["minhash"]["size"] == 0
            assert result["fingerprints"]["winnow"]["hashes"] == ""
        else:
            assert_one_line_error(err)


def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    """In a fresh process of its own: on a broken pipe ``main`` points the process's stdout
    (file descriptor 1) at ``/dev/null``, which in the test process would be pytest's."""
    big = tmp_path / "big.txt"
    big.write_text(SAMPLE.read_text(encoding="utf-8") * 200, encoding="utf-8")
    reader = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE)
    reader.wait()
    writer = subprocess.run(
        [sys.executable, "-m", "admin.cli", "fingerprint", "--json", str(big)],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        check=False,
    )
    reader.stdin.close()
    assert writer.returncode == 0
    assert b"Traceback" not in writer.stderr
