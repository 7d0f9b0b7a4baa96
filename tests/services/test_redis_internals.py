"""The parts of redis-py (and hiredis, fakeredis) that the wire layer builds on but that are not
their documented API are still there, in the shape it relies on.

Why: ``shared/infra/wire.py``, ``autopipe.py`` and ``connection.py`` answer commands the way
redis-py's client would, so they take redis-py's own error parser, option markers, pipeline
recording, response callbacks and connection hooks. A release may move any of these without
notice; ``pyproject.toml`` bounds redis-py to the releases checked here, and when the bound is
raised this test says which piece moved and who uses it. No Redis is needed: every check is
against the library itself.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, NoReturn

import hiredis
import pytest
import redis
import redis.asyncio as aioredis
from redis.exceptions import BusyLoadingError, NoScriptError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError

from shared.infra.autopipe import BLOCKING, COALESCED, _answer
from shared.infra.connection import PackedConnection, WiredRedis
from shared.infra.wire import pack

VERSION = f"redis-py {redis.__version__}"


def moved(what: str, user: str) -> NoReturn:
    """Fail, naming the internal that changed and the code that relies on it."""
    pytest.fail(f"{VERSION}: {what} (relied on by {user})", pytrace=False)


def internal(module: str, name: str, user: str) -> Any:
    """``module.name``, or a failure naming it."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        moved(f"{module}.{name} is gone ({err})", user)


def check(condition: object, what: str, user: str) -> None:
    if not condition:
        moved(what, user)


# One call per command the auto-pipeline sends, as the services make it.
SAMPLES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "delete": (("k1", "k2"), {}),
    "evalsha": (("f" * 40, 1, "k", "a"), {}),
    "exists": (("k",), {}),
    "get": (("k",), {}),
    "hget": (("h", "f"), {}),
    "hgetall": (("h",), {}),
    "hmget": (("h", ["version", "hash"]), {}),
    "hset": (("h", "f", "v"), {}),
    "incr": (("n",), {}),
    "ping": ((), {}),
    "sadd": (("s", "m"), {}),
    "script_load": (("return 1",), {}),
    "pexpire": (("k", 1000), {}),
    "set": (("k", "v"), {"nx": True, "px": 1000}),
    "sismember": (("s", "m"), {}),
    "smembers": (("s",), {}),
    "srem": (("s", "m"), {}),
    "xack": (("st", "g", "1-0"), {}),
    "xadd": (("st", {b"c": b"{}"}), {"maxlen": 10, "approximate": True}),
    "xautoclaim": (("st", "g", "c", 5000), {"start_id": "0-0", "count": 10}),
    "xinfo_groups": (("st",), {}),
    "xlen": (("st",), {}),
    "xpending_range": (("st", "g"), {"min": "-", "max": "+", "count": 10}),
    "xrange": (("st",), {"min": "1-0", "max": "+", "count": 5}),
    "xrevrange": (("st",), {"count": 1}),
    "zadd": (("z", {"m": 1.0}), {"xx": True, "ch": True}),
    "zcard": (("z",), {}),
    "zrange": (("z", 0, -1), {"withscores": True}),
    "zrangebyscore": (("z", "-inf", 5), {"start": 0, "num": 100}),
    "zrem": (("z", "m"), {}),
    "zremrangebyscore": (("z", "-inf", 5), {}),
    "zrevrange": (("z", 0, 9), {"withscores": True}),
    "zscore": (("z", "m"), {}),
    "xread": (({"st": "0-0"},), {"count": 10, "block": 1000}),
    "xreadgroup": (("g", "c", {"st": ">"}), {"count": 10, "block": 1000}),
}

AUTOPIPE = "AutoPipeline._build and _answer (shared/infra/autopipe.py)"


def recorded(name: str, protocol: int = 3) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The sample call of a command as a redis-py pipeline records it."""
    args, kwargs = SAMPLES[name]
    return record(name, args, kwargs, protocol)


def record(
    name: str, args: tuple[Any, ...], kwargs: dict[str, Any], protocol: int = 3
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A command's arguments and options as a redis-py pipeline records them (the way the
    auto-pipeline builds commands without sending them)."""
    pipe = aioredis.Redis(protocol=protocol).pipeline(transaction=False)
    stack: Any = getattr(pipe, "command_stack", None)
    check(isinstance(stack, list), "the asyncio Pipeline has no command_stack list", AUTOPIPE)
    check(callable(getattr(pipe, name, None)), f"the Pipeline has no command {name!r}", AUTOPIPE)
    getattr(pipe, name)(*args, **kwargs)
    check(
        len(stack) == 1 and isinstance(stack[0], tuple) and len(stack[0]) == 2,
        f"Pipeline.command_stack holds {stack!r} after one {name}, not one (args, options) pair",
        AUTOPIPE,
    )
    command, options = stack[0]
    check(
        isinstance(command, tuple) and isinstance(options, dict),
        f"a command_stack entry is {stack[0]!r}, not (args tuple, options dict)",
        AUTOPIPE,
    )
    stack.clear()
    return command, options


def test_every_auto_pipelined_command_has_a_sample() -> None:
    assert set(SAMPLES) == COALESCED | BLOCKING


@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("name", sorted(COALESCED | BLOCKING))
def test_a_recorded_command_fits_its_response_callback(name: str, protocol: int) -> None:
    """The options a command records are the markers ``_answer`` drops plus what the command's
    callback takes; the callback answers at once (``_answer`` does not await it)."""
    markers = {"keys", internal("redis.client", "NEVER_DECODE", AUTOPIPE)}
    markers.add(internal("redis.client", "EMPTY_RESPONSE", AUTOPIPE))
    command, options = recorded(name, protocol)
    check(isinstance(command[0], str), f"{name} records its name as {command[0]!r}", AUTOPIPE)
    callbacks = getattr(aioredis.Redis(protocol=protocol), "response_callbacks", None)
    check(hasattr(callbacks, "get"), "Redis.response_callbacks is not a mapping", AUTOPIPE)
    assert callbacks is not None
    callback = callbacks.get(command[0])
    if callback is None:
        unknown = options.keys() - markers
        check(not unknown, f"{name} has options {options} but no callback", AUTOPIPE)
        return
    check(
        not inspect.iscoroutinefunction(callback),
        f"the response callback of {command[0]} is a coroutine function",
        AUTOPIPE,
    )
    rest = {key: value for key, value in options.items() if key not in markers}
    try:
        inspect.signature(callback).bind(None, **rest)
    except TypeError as err:
        moved(f"{command[0]} records options {sorted(rest)} its callback refuses ({err})", AUTOPIPE)
    except ValueError:
        pass  # a builtin without a signature: nothing to check


class _Canned:
    """A connection whose next reply is given (an error reply raised, as redis-py's are)."""

    # redis-py 8.2 on: whether the connection fell back to RESP2 after asking for RESP3 (its
    # replies then take RESP2's callbacks). The wire never falls back: its HELLO fails instead.
    _resp2_fallback = False

    def __init__(self, reply: Any) -> None:
        self.reply = reply

    async def read_response(self, disable_decoding: bool = False, **_: Any) -> Any:
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def canned(reply: Any) -> Any:
    return _Canned(reply)  # typed as redis-py's Connection, whose read_response it stands for


# (command, protocol, a raw reply as hiredis gives it)
REPLIES: list[tuple[str, int, Any]] = [
    ("get", 3, b"v"),
    ("get", 3, None),
    ("set", 3, b"OK"),
    ("set", 2, None),
    ("hgetall", 3, {b"f": b"v"}),
    ("hgetall", 2, [b"f", b"v"]),
    ("zrange", 3, [[b"m", 1.5]]),
    ("zrange", 2, [b"m", b"1.5"]),
    ("zscore", 3, 1.5),
    ("zscore", 2, b"1.5"),
    ("xrange", 3, [[b"1-0", [b"c", b"x"]]]),
    ("xread", 3, {b"st": [[b"1-0", [b"c", b"x"]]]}),
    ("xread", 2, [[b"st", [[b"1-0", [b"c", b"x"]]]]]),
    ("sismember", 3, 1),
    ("xautoclaim", 3, [b"0-0", [[b"1-0", [b"c", b"x"]]], []]),
    ("xautoclaim", 2, [b"0-0", [[b"1-0", [b"c", b"x"]]], []]),
    ("xpending_range", 2, [[b"1-0", b"c", 10, 1]]),
    ("xpending_range", 3, [[b"1-0", b"c", 10, 1]]),
    ("xinfo_groups", 2, [[b"name", b"g", b"consumers", 1, b"pending", 0, b"lag", 0]]),
    ("xinfo_groups", 3, [{b"name": b"g", b"consumers": 1, b"pending": 0, b"lag": 0}]),
    ("exists", 3, ResponseError("WRONGTYPE Operation against a key")),
]


@pytest.mark.parametrize(("name", "protocol", "reply"), REPLIES)
async def test_answers_are_what_parse_response_makes(name: str, protocol: int, reply: Any) -> None:
    """``_answer`` turns a raw reply into what ``Redis.parse_response`` returns (or raises)."""
    command, options = recorded(name, protocol)
    client = aioredis.Redis(protocol=protocol)
    ours = _answer(client.response_callbacks, command, dict(options), reply)
    try:
        theirs = await client.parse_response(canned(reply), command[0], **dict(options))
    except ResponseError as err:
        theirs = err
    what = f"{name} answers {theirs!r} to {reply!r}, _answer gives {ours!r}"
    check(ours == theirs, what, AUTOPIPE)


async def test_an_empty_response_marker_answers_an_error_reply() -> None:
    """A command that may be refused (MGET of no key) states its answer in an option."""
    command, options = record("mget", ([],), {})
    empty = internal("redis.client", "EMPTY_RESPONSE", AUTOPIPE)
    check(empty in options, f"MGET of no key records {options}, without {empty!r}", AUTOPIPE)
    client = aioredis.Redis()
    refusal = ResponseError("ERR wrong number of arguments for 'mget' command")
    theirs = await client.parse_response(canned(refusal), command[0], **dict(options))
    assert _answer(client.response_callbacks, command, dict(options), refusal) == theirs == []


def test_a_binary_reply_marker_is_the_one_commands_set() -> None:
    _, options = record("dump", ("k",), {})
    never = internal("redis.client", "NEVER_DECODE", AUTOPIPE)
    check(never in options, f"DUMP records {options}, without {never!r}", AUTOPIPE)


WIRE = "the wire's reader (shared/infra/wire.py _Socket)"


def test_error_replies_become_redis_py_exceptions() -> None:
    parser = internal("redis._parsers.base", "BaseParser", WIRE)
    parse_error: Any = getattr(parser, "parse_error", None)
    check(callable(parse_error), "BaseParser.parse_error is gone", WIRE)
    for text, kind in [
        ("NOSCRIPT No matching script", NoScriptError),
        ("LOADING Redis is loading the dataset in memory", BusyLoadingError),
        ("WRONGTYPE Operation against a key", ResponseError),
    ]:
        error = parse_error(text)
        check(type(error) is kind, f"BaseParser.parse_error({text!r}) is {error!r}", WIRE)
    # The auto-pipeline sends a LOADING reply the retrying way because it is a connection error.
    check(
        issubclass(BusyLoadingError, RedisConnectionError),
        "BusyLoadingError is no longer a ConnectionError",
        "AutoPipeline.answered and _One.answered (shared/infra/autopipe.py)",
    )


def test_hiredis_reads_as_the_wire_asks() -> None:
    parser = internal("redis._parsers.base", "BaseParser", WIRE)
    more = object()
    reader = hiredis.Reader(replyError=parser.parse_error, notEnoughData=more)
    reader.feed(b"-NOSCRIPT No matching script\r\n#f\r\n>2\r\n$4\r\npush\r\n$1\r\nx\r\n$3\r\nab")
    check(isinstance(reader.gets(), NoScriptError), "hiredis's replyError is not called", WIRE)
    check(reader.gets() is False, "hiredis does not read a RESP3 false", WIRE)
    push = reader.gets()
    check(isinstance(push, hiredis.PushNotification), f"a RESP3 push reads as {push!r}", WIRE)
    check(reader.gets() is more, "hiredis does not answer notEnoughData on a part reply", WIRE)
    check(callable(getattr(hiredis, "ProtocolError", None)), "hiredis.ProtocolError is gone", WIRE)
    packed = pack(("SET", "k", 1))
    check(packed == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n1\r\n", f"packed {packed!r}", WIRE)


CONNECTION = "PackedConnection and connect (shared/infra/connection.py)"


async def test_a_connection_packs_through_pack_command() -> None:
    """Overriding ``pack_command`` packs every command: single ones and pipelines."""
    packed: list[tuple[Any, ...]] = []

    class Spy(PackedConnection):
        def pack_command(self, *args: Any) -> list[bytes]:
            packed.append(args)
            return super().pack_command(*args)

        async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            self.sent = command

    spy = Spy()
    await spy.send_command("PING")
    spy.pack_commands([("GET", "k")])
    check(
        packed == [("PING",), ("GET", "k")],
        f"send_command/pack_commands packed {packed} through pack_command",
        CONNECTION,
    )
    check(spy.sent == [b"*1\r\n$4\r\nPING\r\n"], f"send_command sent {spy.sent!r}", CONNECTION)


def test_a_pool_tells_the_wire_where_to_connect() -> None:
    pool = aioredis.BlockingConnectionPool.from_url(
        "redis://who:secret@db.example:6390/3?protocol=2", connection_class=PackedConnection
    )
    options: dict[str, Any] = getattr(pool, "connection_kwargs", {})
    seen = {key: options.get(key) for key in ("host", "port", "db", "username", "password")}
    expected = {"host": "db.example", "port": 6390, "db": 3, "username": "who"}
    check(
        seen == {**expected, "password": "secret"} and int(options.get("protocol", 0)) == 2,
        f"BlockingConnectionPool.connection_kwargs is {options}",
        CONNECTION,
    )
    default = internal("redis.utils", "DEFAULT_RESP_VERSION", CONNECTION)
    check(default in (2, 3), f"DEFAULT_RESP_VERSION is {default!r}", CONNECTION)
    client = WiredRedis.from_pool(pool)
    check(type(client) is WiredRedis, "Redis.from_pool does not build its own class", CONNECTION)
    closing = inspect.signature(aioredis.Redis.aclose).parameters
    check(
        list(closing) == ["self", "close_connection_pool"],
        f"Redis.aclose takes {list(closing)} (WiredRedis.aclose overrides it)",
        CONNECTION,
    )


async def test_a_script_calls_only_evalsha_and_script_load() -> None:
    """``AutoPipeline.register_script`` hands itself to redis-py's script object, so that the
    script's commands join the shared pipeline: those must be the only ones it sends."""
    script_class = internal("redis.commands.core", "AsyncScript", "AutoPipeline.register_script")
    calls: list[tuple[Any, ...]] = []

    class Client:
        connection_pool = aioredis.ConnectionPool()

        async def evalsha(self, *args: Any) -> Any:
            calls.append(("evalsha", *args))
            if len(calls) == 1:
                raise NoScriptError("No matching script")
            return 7

        async def script_load(self, script: str) -> str:
            calls.append(("script_load", script))
            return "f" * 40

    script = script_class(Client(), "return 7")
    answer = await script(keys=["k"], args=[1])
    check(
        answer == 7 and [call[0] for call in calls] == ["evalsha", "script_load", "evalsha"],
        f"AsyncScript sent {calls}",
        "AutoPipeline.register_script (shared/infra/autopipe.py)",
    )
    assert calls[-1] == ("evalsha", "f" * 40, 1, "k", 1)


async def test_the_embedded_stand_in_takes_a_blocking_pool() -> None:
    import fakeredis

    client = fakeredis.aioredis.FakeRedis(
        server=fakeredis.FakeServer(),
        connection_pool_class=aioredis.BlockingConnectionPool,
        max_connections=7,
    )
    try:
        pool = client.connection_pool
        check(
            isinstance(pool, aioredis.BlockingConnectionPool) and pool.max_connections == 7,
            f"fakeredis {fakeredis.__version__} built a {type(pool).__name__}",
            "connect without REDIS_URL (shared/infra/connection.py)",
        )
        assert await client.eval("return 1", 0) == 1  # fakeredis[lua]: the store's script
    finally:
        await client.aclose()


CLUSTER = (
    "ClusterClient (shared/infra/cluster.py) and AutoPipeline._send (shared/infra/autopipe.py)"
)


async def test_the_cluster_client_routes_through_determine_slot() -> None:
    """``ClusterClient`` overrides ``RedisCluster._determine_slot`` (a stream read's slot, worked
    out locally); the client and its pipeline route keyed commands through it."""
    cluster_class = internal("redis.asyncio.cluster", "RedisCluster", CLUSTER)
    method = getattr(cluster_class, "_determine_slot", None)
    check(inspect.iscoroutinefunction(method), "RedisCluster._determine_slot is gone", CLUSTER)
    params = list(inspect.signature(method).parameters)
    check(params == ["self", "command", "args"], f"_determine_slot takes {params}", CLUSTER)
    for owner, name in [("RedisCluster", "get_nodes_from_slot"), ("PipelineStrategy", "_execute")]:
        source = inspect.getsource(getattr(internal("redis.asyncio.cluster", owner, CLUSTER), name))
        check("_determine_slot" in source, f"{owner}.{name} no longer calls it", CLUSTER)
    retried = getattr(cluster_class, "ERRORS_ALLOW_RETRY", None)
    check(isinstance(retried, tuple), "RedisCluster.ERRORS_ALLOW_RETRY is gone", CLUSTER)


def test_a_cluster_pipeline_takes_evalsha_as_a_plain_command() -> None:
    """The auto-pipeline records EVALSHA with ``execute_command``: the ``evalsha`` method of a
    cluster pipeline refuses it by name."""
    from redis.asyncio.cluster import RedisCluster
    from redis.exceptions import RedisClusterException

    pipe = RedisCluster(host="127.0.0.1", port=1).pipeline(transaction=False)
    with pytest.raises(RedisClusterException, match="blocked"):
        pipe.evalsha("f" * 40, 1, "k")
    pipe.execute_command("EVALSHA", "f" * 40, 1, "k")
    check(len(pipe) == 1, "ClusterPipeline.execute_command does not record", CLUSTER)
