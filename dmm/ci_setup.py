"""The CI configuration `dmm ci setup` writes: a GitHub Actions workflow and a GitLab CI
template, rendered from templates/ (pure: returns their text)."""

from __future__ import annotations

GITHUB_PATH = ".github/workflows/dmm.yml"
GITLAB_PATH = ".gitlab/dmm.gitlab-ci.yml"


def files(*, github: bool = True, gitlab: bool = True, branch: str = "main",
          install: str | None = None) -> dict[str, str]:
    """{path from the repository root: text}."""
    from dmm import __version__
    from dmm.errors import InvalidInputError
    from dmm.render import render

    if not branch or any(c in branch for c in " \t\n\"'[]{}:#"):
        raise InvalidInputError(f"{branch!r} cannot name a branch in the CI files")
    install = install or f"dmm=={__version__}"
    if any(c in install for c in "\"\n\r$`"):
        raise InvalidInputError("--install must not hold quotes, $, ` or a line break")
    context = {"version": __version__, "branch": branch, "install": install}
    out = {}
    if github:
        out[GITHUB_PATH] = render("ci_github.yml.j2", **context)
    if gitlab:
        out[GITLAB_PATH] = render("ci_gitlab.yml.j2", **context)
    return out
