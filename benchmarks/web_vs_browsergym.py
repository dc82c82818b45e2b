"""MintGym's web domain against BrowserGym on MiniWoB++, side by side in one run, with the ratios.

Both sides drive the same Chromium (Debian's ``/usr/bin/chromium``) on the same MiniWoB++ HTML (the ``html``
folder of the installed ``miniwob`` package, served over loopback) and the same task. Measured:

* **memory per session**: N concurrent sessions (``--levels``, default 1 10 50), each reset on the task, then
  PSS summed over the process tree (the Python process, Playwright's driver, every Chromium process; shared
  pages counted once) divided by N. MintGym: one ``WebHost`` (one Chromium, one browser context per session).
  BrowserGym: N ``gym.make`` environments in one Python process, as BrowserGym runs them (each reset launches
  a browser for the task and another for its chat window).
* **click-step latency**: one session, a click on a spot that changes nothing (the instruction bar) and
  the observation that follows. MintGym in-process (an ``Episode`` on a ``WebHost``, no HTTP): plain (the
  screenshot), with the grounded ``a11y`` side channel, with ``a11y`` plus set-of-marks, and with ``a11y`` plus
  the pruned ``dom`` channel (closest to BrowserGym's AXTree + DOM content); its sessions are stepped in turns
  so they share the machine's state. The ``a11y`` step is also timed through ``mintgym.make`` (a local env
  server: HTTP on loopback, raw frames), as a gymnasium user runs it; that row is for information.
  BrowserGym: ``env.step("mouse_click(x, y)")`` (its ``coord`` action subset) returning its default observation
  (screenshot, AXTree, DOM snapshot, extra element properties, focused element).
* **reset latency**: the same task with a new seed on a session that already exists, timed to the first
  observation (MintGym: the screenshot; BrowserGym: its default observation). BrowserGym's reset closes and
  relaunches both of its browsers and loads the task page; MintGym's restarts MiniWoB's episode with the new
  seed on the page already loaded (a different task would load its page), as MiniWoB's own core allows.

BrowserGym's built-in waits. Its MiniWoB tasks set Playwright's ``slow_mo`` to 100 ms (every Playwright
operation is delayed by that much), and ``BrowserEnv`` sleeps ``pre_observation_delay`` = 0.5 s after every
action before it reads the page. Both are constructor arguments of ``BrowserEnv``, so BrowserGym is measured
twice and labelled: **as shipped** (defaults) and **waits removed** (``slow_mo=0, pre_observation_delay=0``).
Its remaining waits (``domcontentloaded`` checks, MiniWoB's ``WOB_TASK_READY``) return at once on a loaded page
and stay. The step target is judged against the waits-removed numbers, the stricter comparison; memory and the
open+reset wall times are as shipped. MintGym keeps its own settle after each action (nothing to wait for on a
click that starts no navigation).

Viewports differ and stay each side's own: MintGym shows MiniWoB's 160x210 task area, BrowserGym's MiniWoB
tasks set 332x214.

BrowserGym is installed by this script into its own virtual environment (``benchmarks/.venvs/browsergym``,
made once and reused) and runs in a subprocess under that interpreter (this same file, ``--browsergym-worker``),
which reports JSON back. Its Playwright (1.44, pinned by browsergym-core) is pointed at Debian's Chromium: the
environment gets ``pw_chromium_kwargs={"executable_path": ...}``, and the chat window's browser, which
BrowserGym launches without those kwargs, gets the same executable through a default added to
``BrowserType.launch`` in the worker. Playwright's own browser download is never used.

    .venv/bin/python benchmarks/web_vs_browsergym.py [--levels 1 10 50] [--steps 20] [--resets 5]
        [--task miniwob/click-button] [--quick]

``--quick`` runs N = 1 and 2 with a few steps and resets (a fast check that both sides work). The machine is
shared, so read latencies together with the load average printed in the header.
"""

from __future__ import annotations

# Only the standard library at module level: the BrowserGym worker runs this file under BrowserGym's own
# virtual environment, where MintGym is not installed. MintGym's imports live in the functions that use them.
import argparse
import functools
import http.server
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "benchmarks" / ".venvs" / "browsergym"
BROWSERGYM_VERSION = "0.14.3"
MIB = 2**20
#: Lift MiniWoB's own episode timer (MintGym); BrowserGym's MiniWoB tasks already set 1000 s.
MINTGYM_OPTIONS = {"miniwob_time_limit_ms": 3_600_000}
#: MintGym step configurations: name -> (side channels, extra session options).
MINTGYM_CONFIGS: dict[str, tuple[tuple[str, ...], dict]] = {
    "MintGym plain": ((), {}),
    "MintGym a11y": (("a11y",), {}),
    "MintGym a11y+set-of-marks": (("a11y",), {"set_of_marks": True}),
    "MintGym a11y+dom": (("a11y", "dom"), {}),
}
#: BrowserGym step/reset configurations: name -> BrowserEnv keyword arguments.
BROWSERGYM_CONFIGS: dict[str, dict] = {
    "BrowserGym as shipped": {},
    "BrowserGym waits removed": {"slow_mo": 0, "pre_observation_delay": 0.0},
}
#: The same a11y step through the env server (HTTP on loopback), as ``mintgym.make`` gives it.
CLIENT_A11Y = "MintGym a11y via mintgym.make"
WARMUP_STEPS = 3
WORKER_TIMEOUT_S = 3600


class BenchmarkError(Exception):
    """A failure the user can act on; printed as one line."""


# ---- shared by both sides --------------------------------------------------------------------------------------
def tree_pss(root: int) -> int:
    """PSS in bytes of process ``root`` and all its descendants (from /proc; no psutil in BrowserGym's venv)."""
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total += next(int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:"))
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    stack.extend(int(child) for child in f.read().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError, StopIteration):
            continue  # the process ended while we looked
    return total


def mem_available() -> int:
    """MemAvailable of the machine, in bytes."""
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))


def summary(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"median": statistics.median(ordered), "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
            "n": len(ordered)}


def click_point(i: int) -> tuple[int, int]:
    """A spot at the page's top left (MiniWoB's instruction bar, which BrowserGym empties), moving a little each
    step: clicking it changes nothing (an episode that ends anyway is counted and reported)."""
    return 4 + i % 20, 6


def memory_guard(n: int, per_session_guess: int, side: str) -> str | None:
    """Why a level of ``n`` sessions must be skipped on this shared machine (None when it fits)."""
    need = n * per_session_guess + 1024**3
    have = mem_available()
    if need > have:
        return (f"{side} N={n} skipped: it needs about {need / 1024**3:.1f} GiB and only "
                f"{have / 1024**3:.1f} GiB is available")
    return None


def not_measured(side: str, n: int, err: Exception) -> str:
    first = (str(err).strip().splitlines() or [""])[0][:200]
    return f"{side} N={n} not measured: {type(err).__name__}: {first}"


# ---- BrowserGym side (runs under BrowserGym's venv) ------------------------------------------------------------
def reset_retrying(env, seed: int, tries: int = 3) -> tuple[dict, int]:
    """``env.reset(seed=seed)``, tried again on an error (its 5 s Playwright timeout under load).

    Returns the observation and how many tries failed first."""
    for attempt in range(tries - 1):
        try:
            return env.reset(seed=seed)[0], attempt
        except Exception as err:  # noqa: BLE001 (any failure of a reset is worth one more try; the last one raises)
            print(f"BrowserGym reset failed, trying again: {type(err).__name__}: {err}", file=sys.stderr)
    return env.reset(seed=seed)[0], tries - 1


def browsergym_worker(config: dict) -> dict:
    """Measure BrowserGym; ``config`` holds task, levels, steps, resets. Returns the JSON-able results."""
    import logging
    from importlib.metadata import version

    import browsergym.miniwob  # noqa: F401  (registers the browsergym/miniwob.* environments)
    import gymnasium as gym
    from browsergym.core.action.highlevel import HighLevelActionSet
    from playwright.sync_api._generated import BrowserType

    logging.getLogger("browsergym").setLevel(logging.ERROR)
    chromium = config["chromium"]
    launch = BrowserType.launch

    @functools.wraps(launch)
    def launch_debian_chromium(self, **kwargs):
        kwargs.setdefault("executable_path", chromium)  # the chat window's browser gets no pw_chromium_kwargs
        return launch(self, **kwargs)

    BrowserType.launch = launch_debian_chromium
    env_id = "browsergym/miniwob." + config["task"].split("/", 1)[1]
    mapping = HighLevelActionSet(subsets=["coord"]).to_python_code

    def make(extra: dict):
        return gym.make(env_id, headless=True, pw_chromium_kwargs={"executable_path": chromium},
                        action_mapping=mapping, **extra)

    out: dict = {"versions": {"browsergym-core": version("browsergym-core"),
                              "browsergym-miniwob": version("browsergym-miniwob"),
                              "playwright": version("playwright")},
                 "memory": [], "skipped": [], "steps": {}, "resets": {}, "ended_during_steps": 0,
                 "latency_retries": 0}

    # memory at each level, as shipped
    per_session_guess = 400 * MIB
    for n in config["levels"]:
        skip = memory_guard(n, per_session_guess, "BrowserGym")
        if skip:
            out["skipped"].append(skip)
            continue
        envs = [make({}) for _ in range(n)]
        try:
            start = time.perf_counter()
            retries = sum(reset_retrying(env, i)[1] for i, env in enumerate(envs))
            wall = time.perf_counter() - start
            total = tree_pss(os.getpid())
            out["memory"].append({"sessions": n, "total": total, "open_reset_wall": wall, "retries": retries})
            per_session_guess = total // n  # per session falls as N grows: an upper bound
            if not out.get("browser"):
                out["browser"] = envs[0].unwrapped.browser.version
        except Exception as err:  # noqa: BLE001 (reported in the table; the other levels still run)
            out["skipped"].append(not_measured("BrowserGym", n, err))
        finally:
            for env in envs:
                env.close()

    for name, extra in BROWSERGYM_CONFIGS.items():
        env = make(extra)
        try:
            obs, retries = reset_retrying(env, 0)
            out["latency_retries"] += retries
            viewport = env.unwrapped.task.viewport
            out["observation"] = {"keys": sorted(obs), "viewport": f"{viewport['width']}x{viewport['height']}",
                                  "axtree_nodes": len(obs["axtree_object"]["nodes"]),
                                  "screenshot": "x".join(map(str, obs["screenshot"].shape[1::-1]))}
            out.setdefault("browser", env.unwrapped.browser.version)
            times = []
            for i in range(config["steps"] + WARMUP_STEPS):
                x, y = click_point(i)
                start = time.perf_counter()
                _obs, _reward, terminated, truncated, _info = env.step(f"mouse_click({x}, {y})")
                if i >= WARMUP_STEPS:
                    times.append(time.perf_counter() - start)
                if terminated or truncated:
                    out["ended_during_steps"] += 1
                    out["latency_retries"] += reset_retrying(env, i + 1)[1]
            out["steps"][name] = summary(times)
            times = []
            for seed in range(1, config["resets"] + 1):
                start = time.perf_counter()
                out["latency_retries"] += reset_retrying(env, 100 + seed)[1]
                times.append(time.perf_counter() - start)
            out["resets"][name] = summary(times)
        finally:
            env.close()
    return out


# ---- the BrowserGym virtual environment and its subprocess -----------------------------------------------------
def ensure_venv(browsergym_version: str) -> Path:
    """BrowserGym's interpreter, installing BrowserGym into ``VENV`` first when it is not there yet."""
    python = VENV / "bin" / "python"
    stamp = VENV / "installed.txt"
    spec = [f"browsergym-core=={browsergym_version}", f"browsergym-miniwob=={browsergym_version}"]
    if python.exists() and stamp.exists() and stamp.read_text().split() == spec:
        return python
    try:
        VENV.parent.mkdir(parents=True, exist_ok=True)
        (VENV.parent / ".gitignore").write_text("# made by benchmarks/web_vs_browsergym.py: no source here\n*\n")
    except OSError as err:
        raise BenchmarkError(f"cannot make BrowserGym's virtual environment at {VENV}: {err}") from None
    base = getattr(sys, "_base_executable", sys.executable)
    print(f"installing {' '.join(spec)} into {VENV} (once) ...", flush=True)
    made = subprocess.run([base, "-m", "venv", "--clear", str(VENV)], check=False, capture_output=True, text=True)
    if made.returncode != 0:
        raise BenchmarkError(f"cannot make BrowserGym's virtual environment at {VENV}: {last_line(made.stderr)}")
    try:
        pip = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *spec],
                             check=False, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        raise BenchmarkError(f"installing {' '.join(spec)} into {VENV} took over 15 minutes; is the package "
                             f"registry reachable?") from None
    if pip.returncode != 0:
        raise BenchmarkError(f"cannot install {' '.join(spec)} into {VENV} (pip exited {pip.returncode}): "
                             f"{last_line(pip.stderr)}")
    stamp.write_text("\n".join(spec) + "\n")
    return python


def last_line(text: str) -> str:
    """What a failed command said last: its last ERROR line (pip), else its last line (a traceback's exception)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR")]
    return (errors or lines or ["(no output)"])[-1]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def serve_miniwob() -> tuple[http.server.ThreadingHTTPServer, str]:
    """A loopback HTTP server over the ``miniwob`` package's html folder; returns it and BrowserGym's MINIWOB_URL."""
    from mintgym.environments.web.server import miniwob_html_dir

    html = miniwob_html_dir()
    if not (html / "miniwob").is_dir():
        raise BenchmarkError(f"the miniwob package's html folder has no miniwob/ tasks: {html}")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(html)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/miniwob/"


def run_browsergym(python: Path, config: dict) -> dict:
    server, url = serve_miniwob()
    try:
        with tempfile.TemporaryDirectory(prefix="bgym-bench-") as tmp:
            result = Path(tmp) / "result.json"
            cmd = [str(python), str(Path(__file__).resolve()), "--browsergym-worker", json.dumps(config),
                   "--worker-out", str(result)]
            # its own process group, so that a worker stopped early goes with its browsers
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=tmp,
                                    env={**os.environ, "MINIWOB_URL": url, "PYTHONPATH": ""}, start_new_session=True)
            try:
                _, stderr = proc.communicate(timeout=WORKER_TIMEOUT_S)
            except BaseException as err:  # past the time limit, or this process interrupted
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                if isinstance(err, subprocess.TimeoutExpired):
                    raise BenchmarkError(f"the BrowserGym side took over {WORKER_TIMEOUT_S} s and was "
                                         "stopped") from None
                raise
            if proc.returncode != 0 or not result.exists():
                raise BenchmarkError(f"the BrowserGym side failed (exit {proc.returncode}): {last_line(stderr)}")
            return json.loads(result.read_text())
    finally:
        server.shutdown()
        server.server_close()


# ---- MintGym side ------------------------------------------------------------------------------------------------
async def mintgym_memory(task, n: int) -> dict:
    import asyncio

    from mintgym.env.episode import Episode
    from mintgym.environments.web.host import WebHost

    host = WebHost(executable_path=CHROMIUM)
    await host.start()
    try:
        start = time.perf_counter()
        envs = await asyncio.gather(*(host.create(MINTGYM_OPTIONS) for _ in range(n)))
        await asyncio.gather(*(Episode(env).reset(task, i) for i, env in enumerate(envs)))
        wall = time.perf_counter() - start
        return {"sessions": n, "total": tree_pss(os.getpid()), "open_reset_wall": wall,
                "browser": host.browser_version}
    finally:
        await host.stop()


async def mintgym_latency(task, steps: int, resets: int) -> dict:
    from mintgym.action_spaces import Click
    from mintgym.env.episode import Episode
    from mintgym.environments.web.host import WebHost

    host = WebHost(executable_path=CHROMIUM)
    await host.start()
    out: dict = {"steps": {}, "resets": {}, "ended_during_steps": 0}
    try:
        episodes = {}
        for name, (channels, extra) in MINTGYM_CONFIGS.items():
            env = await host.create({**MINTGYM_OPTIONS, **extra})
            episodes[name] = Episode(env, frozenset(channels))
            obs, _info = await episodes[name].reset(task, 0)
            if obs.a11y:
                out["a11y_elements"] = len(obs.a11y.splitlines())
        out["screenshot"] = "x".join(map(str, obs.screenshot.shape[1::-1]))
        times: dict[str, list[float]] = {name: [] for name in episodes}
        for i in range(steps + WARMUP_STEPS):
            for name, ep in episodes.items():
                x, y = click_point(i)
                start = time.perf_counter()
                result = await ep.step(Click(x=x, y=y))
                if i >= WARMUP_STEPS:
                    times[name].append(time.perf_counter() - start)
                if result.terminated or result.truncated:
                    out["ended_during_steps"] += int(result.terminated)  # step-limit truncation is expected
                    await ep.reset(task, i + 1)
        out["steps"] = {name: summary(values) for name, values in times.items()}
        plain = episodes["MintGym plain"]
        reset_times = []
        for seed in range(1, resets + 1):
            start = time.perf_counter()
            await plain.reset(task, 100 + seed)
            reset_times.append(time.perf_counter() - start)
        out["resets"]["MintGym plain"] = summary(reset_times)
        return out
    finally:
        await host.stop()


def mintgym_client(task_id: str, steps: int, resets: int) -> dict:
    """The grounded ``a11y`` step and a reset as a gymnasium user sees them: ``mintgym.make`` (a local env server)."""
    import mintgym
    from mintgym.action_spaces import Click

    env = mintgym.make(task_id, side_channels=("a11y",), env_options=MINTGYM_OPTIONS)
    try:
        env.reset(seed=0)
        step_times, reset_times = [], []
        for i in range(steps + WARMUP_STEPS):
            x, y = click_point(i)
            start = time.perf_counter()
            _obs, _reward, terminated, truncated, _info = env.step(Click(x=x, y=y))
            if i >= WARMUP_STEPS:
                step_times.append(time.perf_counter() - start)
            if terminated or truncated:
                env.reset(seed=i + 1)
        for seed in range(1, resets + 1):
            start = time.perf_counter()
            env.reset(seed=100 + seed)
            reset_times.append(time.perf_counter() - start)
        return {"steps": {CLIENT_A11Y: summary(step_times)}, "resets": {CLIENT_A11Y: summary(reset_times)}}
    finally:
        env.close()


def run_mintgym(task_id: str, levels: list[int], steps: int, resets: int) -> dict:
    import asyncio

    from mintgym.env import registration

    task = registration.task(task_id)
    out: dict = {"memory": [], "skipped": [], "viewport": list(task.viewport)}
    per_session_guess = 150 * MIB
    for n in levels:
        skip = memory_guard(n, per_session_guess, "MintGym")
        if skip:
            out["skipped"].append(skip)
            continue
        try:
            row = asyncio.run(mintgym_memory(task, n))
        except Exception as err:  # noqa: BLE001 (reported in the table; the other levels still run)
            out["skipped"].append(not_measured("MintGym", n, err))
            continue
        out["browser"] = row.pop("browser")
        out["memory"].append(row)
        per_session_guess = row["total"] // n  # per session falls as N grows: an upper bound
    out.update(asyncio.run(mintgym_latency(task, steps, resets)))
    client = mintgym_client(task_id, steps, resets)
    out["steps"].update(client["steps"])
    out["resets"].update(client["resets"])
    return out


# ---- the table ---------------------------------------------------------------------------------------------------
def ms(s: dict | None) -> str:
    return f"{s['median'] * 1000:9.1f} {s['p95'] * 1000:9.1f}" if s else f"{'n/a':>9} {'n/a':>9}"


def ratio(numerator: float | None, denominator: float | None) -> str:
    return f"{numerator / denominator:.1f}x" if numerator and denominator else "n/a"


def verdict(value: float | None, target: float) -> str:
    if value is None:
        return "NOT MEASURED"
    return "PASS" if value >= target else "FAIL"


def report(mint: dict, bgym: dict | None, args: argparse.Namespace) -> None:
    bg = bgym or {"memory": [], "skipped": [], "steps": {}, "resets": {}}
    load = os.getloadavg()
    print()
    versions = bg.get("versions", {})
    print(f"MintGym web vs BrowserGym {versions.get('browsergym-core', '(not run)')} on {args.task}; {CHROMIUM} for "
          f"both: {mint.get('browser', '?')} under MintGym's Playwright, {bg.get('browser', '?')} under BrowserGym's "
          f"Playwright {versions.get('playwright', '?')}")
    seen = bg.get("observation", {})
    print(f"{os.cpu_count()} CPUs, 1-min load average {args.load_start:.2f} at the start, {load[0]:.2f} at the end, "
          f"{args.mem_start / 1024**3:.1f} GiB memory available at the start: a shared machine, so latencies were "
          f"measured under load")
    print(f"viewports: MintGym {mint['viewport'][0]}x{mint['viewport'][1]} (screenshot {mint.get('screenshot', '?')}), "
          f"BrowserGym {seen.get('viewport', '?')} (screenshot {seen.get('screenshot', '?')}); MintGym's a11y "
          f"channel has {mint.get('a11y_elements', '?')} lines, BrowserGym's AXTree {seen.get('axtree_nodes', '?')} "
          f"nodes")

    print("\nmemory per session: PSS of the whole process tree / N (MiB); open+reset: N sessions made and reset (s)")
    print(f"{'N':>4} {'MintGym':>10} {'BrowserGym':>11} {'ratio':>7} {'MintGym open+reset':>19} "
          f"{'BrowserGym open+reset':>22}")
    mint_rows = {r["sessions"]: r for r in mint["memory"]}
    bg_rows = {r["sessions"]: r for r in bg["memory"]}
    per_session: dict[int, tuple[float | None, float | None]] = {}
    for n in args.levels:
        m, b = mint_rows.get(n), bg_rows.get(n)
        pm = m["total"] / n / MIB if m else None
        pb = b["total"] / n / MIB if b else None
        per_session[n] = (pm, pb)
        print(f"{n:>4} {pm or 0:>10.1f} {pb or 0:>11.1f} {ratio(pb, pm):>7} "
              f"{(m or {}).get('open_reset_wall', 0):>19.2f} {(b or {}).get('open_reset_wall', 0):>22.2f}")
    for line in mint["skipped"] + bg["skipped"]:
        print("  " + line)
    for row in bg["memory"]:
        if row.get("retries"):
            print(f"  BrowserGym N={row['sessions']}: {row['retries']} resets failed once and were tried again "
                  f"(its 5 s Playwright timeout under load); their time is in the open+reset column")

    print(f"\nclick step latency (click + the observation that follows), ms: median p95 over {args.steps} steps")
    for name in [*MINTGYM_CONFIGS, CLIENT_A11Y]:
        print(f"  {name:<40} {ms(mint['steps'].get(name))}")
    for name in BROWSERGYM_CONFIGS:
        print(f"  {name + ' (default obs)':<40} {ms(bg['steps'].get(name))}")
    a11y = mint["steps"].get("MintGym a11y", {}).get("median")
    bg_fair = bg["steps"].get("BrowserGym waits removed", {}).get("median")
    bg_shipped = bg["steps"].get("BrowserGym as shipped", {}).get("median")
    print(f"  BrowserGym / MintGym a11y: {ratio(bg_fair, a11y)} (waits removed), {ratio(bg_shipped, a11y)} "
          f"(as shipped); plain MintGym: {ratio(bg_fair, mint['steps'].get('MintGym plain', {}).get('median'))} "
          f"(waits removed)")

    print(f"\nreset latency (same task, new seed, existing session), ms: median p95 over {args.resets} resets")
    print(f"  {'MintGym':<40} {ms(mint['resets'].get('MintGym plain'))}")
    print(f"  {CLIENT_A11Y:<40} {ms(mint['resets'].get(CLIENT_A11Y))}")
    for name in BROWSERGYM_CONFIGS:
        print(f"  {name:<40} {ms(bg['resets'].get(name))}")
    m_reset = mint["resets"].get("MintGym plain", {}).get("median")
    print(f"  BrowserGym / MintGym: {ratio(bg['resets'].get('BrowserGym waits removed', {}).get('median'), m_reset)} "
          f"(waits removed), {ratio(bg['resets'].get('BrowserGym as shipped', {}).get('median'), m_reset)} "
          f"(as shipped)")
    if bg.get("latency_retries"):
        print(f"  note: {bg['latency_retries']} BrowserGym resets failed once and were tried again (its 5 s "
              f"Playwright timeout under load); a timed one includes its retry")
    if mint.get("ended_during_steps") or bg.get("ended_during_steps"):
        print(f"  note: episodes ended during the click steps (MintGym {mint.get('ended_during_steps', 0)}, "
              f"BrowserGym {bg.get('ended_during_steps', 0)}): the click was not a no-op on this task")

    print("\ntargets")
    pm, pb = per_session.get(50, (None, None))
    mem_ratio = pb / pm if pm and pb else None
    print(f"  memory per session at N=50 at least 8x lower: {verdict(mem_ratio, 8.0)} "
          f"({ratio(pb, pm)}{'' if 50 in args.levels else '; N=50 not in --levels'})")
    step_ratio = bg_fair / a11y if bg_fair and a11y else None
    print(f"  step with the grounded a11y channel at least 2x lower than BrowserGym's observation (waits removed): "
          f"{verdict(step_ratio, 2.0)} ({ratio(bg_fair, a11y)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 10, 50], help="concurrent sessions to measure")
    parser.add_argument("--steps", type=int, default=20, help="timed click steps per configuration")
    parser.add_argument("--resets", type=int, default=5, help="timed resets per configuration")
    parser.add_argument("--task", default="miniwob/click-button", help="a miniwob/<name> task both sides have")
    parser.add_argument("--browsergym-version", default=BROWSERGYM_VERSION)
    parser.add_argument("--quick", action="store_true", help="N = 1 and 2, 3 steps, 2 resets: a fast check")
    parser.add_argument("--browsergym-worker", metavar="JSON", help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.browsergym_worker:  # inside BrowserGym's venv: measure, write JSON, exit
        Path(args.worker_out).write_text(json.dumps(browsergym_worker(json.loads(args.browsergym_worker))))
        return 0

    args.load_start, args.mem_start = os.getloadavg()[0], mem_available()
    if args.quick:
        args.levels, args.steps, args.resets = [1, 2], 3, 2
    try:
        if any(n < 1 for n in args.levels) or args.steps < 1 or args.resets < 1:
            raise BenchmarkError("--levels, --steps and --resets must be positive")
        if not args.task.startswith("miniwob/") or args.task.startswith("miniwob/flight"):
            raise BenchmarkError(f"--task must be a miniwob/<name> task that BrowserGym also has, not {args.task!r}")
        if not os.access(CHROMIUM, os.X_OK):
            raise BenchmarkError(f"Debian's Chromium is not at {CHROMIUM} (apt-get install chromium)")
        python = ensure_venv(args.browsergym_version)  # first: fail fast before the long part
        print(f"MintGym side: levels {args.levels}, {args.steps} steps, {args.resets} resets ...", flush=True)
        mint = run_mintgym(args.task, args.levels, args.steps, args.resets)
        print("BrowserGym side ...", flush=True)
        bgym_error = None
        try:
            bgym = run_browsergym(python, {"task": args.task, "levels": args.levels, "steps": args.steps,
                                           "resets": args.resets, "chromium": CHROMIUM})
        except BenchmarkError as err:
            bgym, bgym_error = None, err
        report(mint, bgym, args)
        if bgym_error:
            raise bgym_error
    except BenchmarkError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
