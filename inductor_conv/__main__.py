"""``python -m inductor_conv demo``: compile a small conv + attention block with the plugin, say what it did."""
import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inductor_conv")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="compile a small conv + attention block, report rewrites, kernels, error and "
                                       "(GPU) speed; on a CPU, TRITON_INTERPRET=1 runs our Triton kernels (slower)")
    demo.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    args = parser.parse_args(argv)

    import torch

    from inductor_conv.demo import run_demo

    return run_demo(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))


if __name__ == "__main__":
    sys.exit(main())
