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
    if device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        # Our Triton kernels run on CPU tensors through Triton's interpreter, which must be on before triton is
        # first imported (torch may already have imported it): start again with it on.
        os.environ["TRITON_INTERPRET"] = "1"
        os.execv(sys.executable, [sys.executable, "-m", "inductor_conv", *(argv or sys.argv[1:])])
    from inductor_conv.demo import run_demo

    return run_demo(device)


if __name__ == "__main__":
    sys.exit(main())
