"""Plan a Hugging Face model with tp-opt, run the plan on N gloo CPU
processes with PyTorch, compare with the unsharded model (docs/python.md).

    python examples/python/parallelize_hf.py [FOLDER] [--nproc N]
"""
import argparse, tempfile, torch, torch.distributed as dist, torch.multiprocessing as mp, transformers, tp_opt
from torch.distributed.device_mesh import init_device_mesh
transformers.utils.logging.disable_progress_bar()

def rank_main(rank, n, folder, plan, ids, store):
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=n)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    with torch.no_grad():
        unsharded = model(ids).logits
        tp_opt.parallelize(model, plan, init_device_mesh("cpu", (n,), mesh_dim_names=("tp",)))
        logits = model(ids).logits
    err = ((logits - unsharded).abs().max() / unsharded.abs().max()).item()
    if rank == 0:
        print(f"tp={n}: matches the unsharded model to {err:.1e}" if err <= 1e-5 else f"tp={n}: differs by {err:.1e}")
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("folder", nargs="?", default="test/frontends/Inputs/hf/llama-tiny")
    p.add_argument("--nproc", type=int, default=2)
    a = p.parse_args()
    model = transformers.AutoModelForCausalLM.from_pretrained(a.folder, dtype=torch.float32)
    ids = torch.randint(0, model.config.vocab_size, (1, 8), generator=torch.Generator().manual_seed(0))
    plan = tp_opt.plan(model, (ids,), tp=a.nproc)
    print(plan)
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(rank_main, args=(a.nproc, a.folder, plan, ids, tmp + "/store"), nprocs=a.nproc)
