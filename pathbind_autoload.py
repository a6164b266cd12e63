"""torch's extension autoload (entry-point group ``torch.backends``) starting PathBind's lmms-eval seam.

``import torch``, which ``lmms_eval.tasks`` does, calls :func:`start`, so PathBind's tasks are indexed even in
processes that never import ``lmms_eval.models`` (``lmms-eval tasks list``, a ``TaskManager()`` built first).
torch fails its own import when an autoloaded function raises, so this module imports nothing at load time
and nothing escapes :func:`start`; ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` turns it off.
"""


def start() -> None:
    """Watch for lmms-eval's modules (``pathbind.lmms.watch.watch_lmms_eval``); a failure is reported, never raised."""
    try:
        from pathbind.lmms.watch import watch_lmms_eval

        watch_lmms_eval()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a broken PathBind install must not break `import torch`
        import sys

        print(f"pathbind: lmms-eval seam not started ({type(exc).__name__}: {exc}); see `pathbind doctor`",
              file=sys.stderr)
