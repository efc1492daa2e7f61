"""The projects sessions run in: a cwd, its files, identifiers and shell commands."""

from __future__ import annotations

from dataclasses import dataclass

from devtools.corpus.words import Text

__all__ = ["Project", "make_projects"]

_LANGS = {
    "ts": (".ts", ".tsx", ".json", ".md"),
    "py": (".py", ".py", ".toml", ".md"),
    "rs": (".rs", ".rs", ".toml", ".md"),
    "go": (".go", ".go", ".mod", ".md"),
}
_COMMANDS = {
    "ts": (
        "npm test",
        "npm run build",
        "npx tsc --noEmit",
        "npx vitest run {file}",
        "npm run lint",
    ),
    "py": ("pytest -x {file}", "ruff check .", "python -m mypy {dir}", "pytest -q", "uv sync"),
    "rs": ("cargo test", "cargo build --release", "cargo clippy -- -D warnings", "cargo fmt"),
    "go": ("go test ./...", "go build ./...", "go vet ./...", "go test -run {ident} ./{dir}"),
}
_GENERIC = (
    "git status",
    "git diff --stat",
    "git log --oneline -n 20",
    "rg -n {ident} {dir}",
    "ls -la {dir}",
    "cat {file}",
    "head -n 80 {file}",
    "wc -l {file}",
)


@dataclass(frozen=True, slots=True)
class Project:
    """A working directory and the vocabulary sessions in it share."""

    cwd: str
    name: str
    user: str
    lang: str
    dirs: tuple[str, ...]
    files: tuple[str, ...]
    idents: tuple[str, ...]
    branches: tuple[str, ...]

    def command(self, text: Text) -> str:
        template = text.pick(_COMMANDS[self.lang] + _GENERIC)
        return template.format(
            file=text.pick(self.files), dir=text.pick(self.dirs), ident=text.pick(self.idents)
        )

    def path(self, text: Text) -> str:
        """An absolute path of a project file (sometimes one that does not exist yet)."""
        if text.rng.random() < 0.1:
            return f"{self.cwd}/{text.pick(self.dirs)}/{text.word()}_{text.word()}.md"
        return f"{self.cwd}/{text.pick(self.files)}"


def _project(text: Text, index: int) -> Project:
    rng = text.rng
    user = text.fresh_word()[:8]
    name = text.plain_word() + rng.choice(
        ("", "-" + text.plain_word(), ".kit", "-v2", "_" + text.plain_word())
    )
    home = rng.choice((f"/home/{user}", f"/Users/{user}"))
    parent = rng.choice(("src", "code", "work", "Projects", f"work/{text.plain_word()}"))
    lang = rng.choice(tuple(_LANGS))
    top = rng.choice(("src", "lib", "pkg", "internal", "app"))
    dirs = [top, "tests", "docs", "scripts"] + [
        f"{top}/{text.word()}" for _ in range(rng.randint(3, 8))
    ]
    exts = _LANGS[lang]
    files = sorted(
        {
            f"{rng.choice(dirs)}/{text.identifier().lower()}{rng.choice(exts)}"
            for _ in range(rng.randint(25, 60))
        }
    )
    return Project(
        cwd=f"{home}/{parent}/{name}" if index else f"{home}/{name}",
        name=name,
        user=user,
        lang=lang,
        dirs=tuple(dirs),
        files=tuple(files),
        idents=tuple(text.identifier() for _ in range(60)),
        branches=("main", f"fix/{text.word()}-{text.word()}", f"feat/{text.word()}"),
    )


def make_projects(text: Text, count: int) -> tuple[Project, ...]:
    """``count`` projects with distinct cwds."""
    projects: list[Project] = []
    while len(projects) < count:
        project = _project(text, len(projects))
        if all(p.cwd != project.cwd for p in projects):
            projects.append(project)
    return tuple(projects)
