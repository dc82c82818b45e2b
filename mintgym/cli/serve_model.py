"""Model commands: ``serve-model PATH`` (an OpenAI-compatible server) and ``build-tiny-model PATH``."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    app.command("serve-model")(serve_model)
    app.command("build-tiny-model")(build_tiny_model)


def serve_model(
    path: Path = typer.Argument(..., help="a model folder: a run folder (its newest checkpoint, or --step), a "
                                          "checkpoint, or any transformers checkpoint (e.g. from build-tiny-model)"),
    step: int | None = typer.Option(None, "--step", min=0, help="with a run folder: the checkpoint of this step"),
    host: str = typer.Option("127.0.0.1", help="interface to bind; anything but loopback needs --api-key"),
    port: int = typer.Option(8001, help="TCP port"),
    max_batch_size: int = typer.Option(16, help="requests batched into one generate call"),
    batch_window_ms: float = typer.Option(10.0, help="how long a batch waits for more requests"),
    api_key: str | None = typer.Option(None, help="bearer token clients must send", envvar="MINTGYM_API_KEY"),
    served_model_name: str | None = typer.Option(
        None, "--served-model-name", help="the model's name in /v1/models and in requests (another name is a "
                                          "404); default: the name of the folder PATH, not its full path"),
) -> None:
    """Serve a VLM with the hf engine at /v1/chat/completions (OpenAI-compatible, with token ids; stream=true
    answers server-sent events)."""
    from mintgym.errors import MintGymError
    from mintgym.inference.server import serve_model as _serve
    from mintgym.trainer.ckpt import policy_folder

    if not path.is_dir():
        raise typer.BadParameter(f"{path} is not a directory", param_hint="PATH")
    if served_model_name is not None and not served_model_name.strip():
        raise typer.BadParameter("the served model name is empty", param_hint="--served-model-name")
    name = served_model_name or path.resolve().name
    try:
        path = policy_folder(path, step)
    except MintGymError as err:
        raise typer.BadParameter(str(err), param_hint="PATH") from None
    typer.echo(f"serving {path} as {name!r}", err=True)
    _serve(str(path), host=host, port=port, model_name=name, max_batch_size=max_batch_size,
           batch_window_s=batch_window_ms / 1000, api_key=api_key)


def build_tiny_model(
    path: Path = typer.Argument(..., help="directory to write the tiny Qwen2-VL into"),
    seed: int = typer.Option(0, help="seed of the random weights"),
) -> None:
    """Build a tiny random-weight Qwen2-VL (about 1 MB) for tests and quickstarts; no download."""
    from mintgym.models.tiny import main

    main(str(path), seed=seed)
