"""The CI configuration `dmm ci setup` writes: a GitHub Actions workflow and a GitLab CI
template, rendered from templates/ (pure: returns their text), and the pip line in them that
installs this dmm.

The install line is never guessed: "dmm" on the package index is another author's project, so
a line by name and version would fail the first run or, once that name has such a version, run
their code in the team's CI. It is what this dmm was installed from (PEP 610's
``direct_url.json``, read through ``importlib.metadata``: a VCS URL and commit), or what the
person gives with ``--install``; a local directory, editable install or local file is nothing
a CI runner can install, so setup refuses and says what to give.
"""

from __future__ import annotations

import json
import re

GITHUB_PATH = ".github/workflows/dmm.yml"
GITLAB_PATH = ".gitlab/dmm.gitlab-ci.yml"

# Third-party actions, pinned by the commit of a release (a tag can be moved to other code;
# a commit cannot): actions/checkout v7.0.1 and actions/setup-python v7.0.0, read from the
# repositories' tags. Update both the commit and the tag in the comment together.
ACTIONS = {
    "checkout": ("actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "setup_python": ("actions/setup-python@5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
}

_HEX_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
GIVE_INSTALL = ('give what CI should install: --install "dmm-memory @ git+https://HOST/'
                'OWNER/dmm.git@COMMIT" (a URL your CI can reach, pinned to a commit)')


def files(*, github: bool = True, gitlab: bool = True, branch: str = "main",
          install: str | None = None) -> dict[str, str]:
    """{path from the repository root: text}. ``install`` is the pip requirement CI installs;
    None: what this dmm was installed from (refused when CI cannot install that)."""
    from dmm import __version__
    from dmm.errors import InvalidInputError
    from dmm.render import render

    if not branch or any(c in branch for c in " \t\n\"'[]{}:#"):
        raise InvalidInputError(f"{branch!r} cannot name a branch in the CI files")
    install = install if install is not None else installed_from()
    # it stands in a shell's double quotes inside YAML's single quotes
    if not install.strip() or any(c in install for c in "\"'\n\r$`\\"):
        raise InvalidInputError("--install must be a pip requirement without quotes, $, `, "
                                "\\ or a line break")
    context = {"version": __version__, "branch": branch, "install": install,
               "actions": ACTIONS}
    out = {}
    if github:
        out[GITHUB_PATH] = render("ci_github.yml.j2", **context)
    if gitlab:
        out[GITLAB_PATH] = render("ci_gitlab.yml.j2", **context)
    return out


def installed_from() -> str:
    """The pip requirement that installs the running dmm, from its distribution's metadata."""
    import importlib.metadata

    from dmm import DISTRIBUTION
    from dmm.errors import InvalidInputError

    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise InvalidInputError(f"this dmm is not installed as the {DISTRIBUTION} package "
                                "(run from a source tree?), so there is no install line to "
                                "copy into CI", hint=GIVE_INSTALL) from None
    return install_line(dist.metadata["Name"] or DISTRIBUTION, dist.version,
                        dist.read_text("direct_url.json"))


def install_line(name: str, version: str, direct_url: str | None) -> str:
    """The requirement for distribution ``name`` installed as PEP 610's ``direct_url`` says
    (None: from an index by name, so that name and version is what was installed)."""
    from dmm.errors import InvalidInputError

    if direct_url is None:
        return f"{name}=={version}"
    try:
        data = json.loads(direct_url)
        url = data["url"]
    except (ValueError, KeyError, TypeError):
        raise InvalidInputError(f"the record of where {name} was installed from "
                                "(direct_url.json) cannot be read", hint=GIVE_INSTALL) from None
    if not isinstance(url, str) or url.startswith("file:") or "://" not in url:
        raise InvalidInputError(
            f"this dmm was installed from {_where(data)} on this machine ({url}), which a CI "
            "runner cannot install", hint=GIVE_INSTALL)
    # user:password, or a token alone as the user (GitHub takes one so); PEP 610 keeps the
    # user "git" of an SSH URL, which is no secret
    userinfo = re.match(r"[A-Za-z0-9+.-]+://([^/?#]*)@", url)
    if userinfo and userinfo.group(1) != "git":
        raise InvalidInputError("the URL this dmm was installed from holds a password or "
                                "token, which must not be written into a committed CI file",
                                hint=GIVE_INSTALL)
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict):
        commit = vcs.get("commit_id")
        if vcs.get("vcs") != "git" or not isinstance(commit, str) or not _HEX_COMMIT.fullmatch(
                commit):
            raise InvalidInputError(f"this dmm was installed from {url} without a git commit "
                                    "to pin", hint=GIVE_INSTALL)
        return f"{name} @ git+{url}@{commit}" + _subdirectory(data)
    archive = data.get("archive_info")
    if isinstance(archive, dict):
        digest = (archive.get("hashes") or {}).get("sha256") if isinstance(
            archive.get("hashes"), dict) else None
        pin = f"#sha256={digest}" if isinstance(digest, str) and digest.isalnum() else ""
        return f"{name} @ {url}{pin}" + _subdirectory(data)
    raise InvalidInputError(f"this dmm was installed from {url} in a way dmm cannot repeat",
                            hint=GIVE_INSTALL)


def _where(data: dict) -> str:
    if isinstance(data.get("dir_info"), dict):
        return ("an editable install of a folder" if data["dir_info"].get("editable")
                else "a local folder")
    return "a local file" if isinstance(data.get("archive_info"), dict) else "a local path"


def _subdirectory(data: dict) -> str:
    sub = data.get("subdirectory")
    return f"#subdirectory={sub}" if isinstance(sub, str) and sub else ""
