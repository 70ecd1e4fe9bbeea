"""``python -m inductor_conv demo``: compile a small Mamba-style block with and without the plugin."""
import argparse
import os
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inductor_conv")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="compile a small conv + attention block, report rewrites, error and speed")
    demo.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    args = parser.parse_args(argv)

    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        # Our Triton kernels run on CPU tensors through Triton's interpreter; it must be on before they are defined.
        os.environ.setdefault("TRITON_INTERPRET", "1")
    from inductor_conv.demo import run_demo

    return run_demo(device)


if __name__ == "__main__":
    sys.exit(main())
