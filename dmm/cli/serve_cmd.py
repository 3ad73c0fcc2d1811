"""`dmm serve`."""

from __future__ import annotations

import secrets
import socket

import click

from dmm.cli.common import emit_json, message, workspace
from dmm.errors import InvalidInputError

MIN_SECRET = 16


def _tokens(raw: tuple[str, ...], decides: bool) -> list[tuple]:
    """(Token, generated) for each NAME or NAME=SECRET; NAME alone gets a generated secret."""
    from dmm.agents.http_api import Token

    out = []
    for item in raw:
        name, sep, secret = item.partition("=")
        name = name.strip()
        if not name or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise InvalidInputError(f"a token's name is a word (letters, digits, - _ .): "
                                    f"{name!r}", hint="e.g. --token alice")
        if sep and secret != secret.strip():
            raise InvalidInputError(f"the secret of token {name} begins or ends with "
                                    "whitespace, which a client's header would lose",
                                    hint=f"give --token {name} alone and dmm generates one")
        if sep and len(secret) < MIN_SECRET:
            raise InvalidInputError(f"the secret of token {name} is shorter than {MIN_SECRET} "
                                    "characters: too easy to guess",
                                    hint=f"give --token {name} alone and dmm generates one")
        out.append((Token(name, secret if sep else secrets.token_urlsafe(24), decides),
                    not sep))
    return out


def _is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address."""
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror as exc:
        raise InvalidInputError(f"cannot resolve --host {host}: {exc.strerror}") from None
    from dmm.agents.http_api import is_loopback_address

    return all(is_loopback_address(info[4][0]) for info in infos)


def _listen(host: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    family, kind, proto, _, address = infos[0]
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are
    # TCP, and without it every keep-alive response waits 40 ms for a delayed ACK
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise InvalidInputError(f"cannot listen on {host}:{port}: {exc.strerror}",
                                hint="another server may use that port: pick another "
                                     "with --port") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but a loopback address needs a token.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port (0: any free port; the address is printed).")
@click.option("--token", "person_tokens", multiple=True, metavar="NAME[=SECRET]",
              envvar="DMM_SERVE_TOKENS", show_envvar=True,
              help="A person's token: every request then needs a token, and this one may "
                   "also approve, reject, resolve and dismiss, recorded as NAME. Without "
                   "=SECRET one is generated and printed once. Repeatable.")
@click.option("--agent-token", "agent_tokens", multiple=True, metavar="NAME[=SECRET]",
              help="An agent's token: may query, check, flag and propose, never decide.")
@click.option("--log-level", type=click.Choice(["error", "warning", "info", "debug"]),
              default="warning", show_default=True, help="What the server logs on stderr "
                                                         "(info: every request).")
@click.option("--openapi", "print_openapi", is_flag=True,
              help="Print the OpenAPI document and exit.")
@click.pass_context
def command(ctx: click.Context, host, port, person_tokens, agent_tokens, log_level,
            print_openapi) -> int:
    """Serve this repository's memory over HTTP (/query, /memories, /write/*, /review/*,
    /usage/*, /conflicts/*), JSON in and out, on 127.0.0.1 by default.

    Without a token anyone on this machine can query and propose, and nobody can decide:
    approving, rejecting, resolving and dismissing need a person's token (--token NAME), whose
    name is recorded as the reviewer. With any token, every request needs one:
    `Authorization: Bearer <secret>`. docs/api.md lists the endpoints; GET /openapi.json
    describes them.

    \b
    Examples:
      dmm serve                                     agents on this machine, no decisions
      dmm serve --token alice                       alice may decide; token printed once
      dmm serve --host 0.0.0.0 --token alice --agent-token ci
      curl -s localhost:8765/query -H 'Content-Type: application/json' \\
           -d '{"query": "add a REST endpoint", "budget": 1200}'
    """
    from dmm.agents.http_api import Access, build_app, openapi

    if print_openapi:
        emit_json(openapi())
        return 0
    if person_tokens:
        from dmm.cli.person import require_person

        require_person("serving a person's token (--token), which may decide", yes=True)
    given = _tokens(person_tokens, True) + _tokens(agent_tokens, False)
    tokens = [t for t, _ in given]
    if len({t.name for t in tokens}) != len(tokens):
        raise InvalidInputError("two tokens have the same name: each name is one person or "
                                "agent")
    if len({t.secret for t in tokens}) != len(tokens):
        raise InvalidInputError("two tokens have the same secret")
    loopback = _is_loopback(host)
    if not loopback and not tokens:
        raise InvalidInputError(f"{host} is not a loopback address: anyone who can reach it "
                                "could use the store, so it needs a token",
                                hint=f"dmm serve --host {host} --token NAME")
    ws = workspace(ctx)
    from dmm.index.refresh import open_fresh

    open_fresh(ws)[0].close()  # the first request answers from a warm cache
    from dmm.semantic import service

    service.serve(ws)  # a long-lived process: it ranks by meaning too (docs/semantic.md)
    sock = _listen(host, port)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    click.echo(f"dmm serve: http://{shown}:{bound_port} (GET /openapi.json describes the API)")
    for t, generated in given:
        kind = "a person's token, may decide" if t.decides else "an agent's token"
        click.echo(f"token {t.name} ({kind}): "
                   + (f"{t.secret}   <- generated, shown only now" if generated else "as given"))
    message("Ctrl-C stops the server.")
    _run(build_app(ws, Access(tuple(tokens), loopback)), sock, log_level, ws.root)
    return 0


def _run(app, sock: socket.socket, log_level: str, root) -> None:
    import logging
    import sys
    import threading

    import uvicorn

    from dmm.conflicts.schedule import Schedule

    sys.stdout.flush()
    # every log line, the requests' too, goes to stderr: stdout carries the address only
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from dmm.agents.http_server import IDLE_TIMEOUT, GuardedH11, InFlight, max_connections

    GuardedH11.limit = max_connections()
    # connections and requests are limited by GuardedH11 and InFlight (docs/api.md, Limits),
    # not by uvicorn's limit_concurrency, which counts idle connections as work
    app = InFlight(app)
    # the scans of [scan] (docs/conflicts.md), while no request is being answered
    Schedule(root, threading.Event(), idle=app.idle).start()
    config = uvicorn.Config(app, http=GuardedH11, log_config=None,
                            log_level=log_level, access_log=log_level in ("info", "debug"),
                            proxy_headers=False, server_header=False,
                            timeout_keep_alive=IDLE_TIMEOUT, timeout_graceful_shutdown=30,
                            lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
