# Makes a random-weight Qwen3-0.6B-shaped checkpoint (bf16) for CompiledLane.SpeedAtRealShape, on the GPU
# machine (transformers + torch there): python3 tests/lanes_compiled/make_random_qwen3_06b.py /tmp/q06
import sys, torch
from transformers import Qwen3Config, Qwen3ForCausalLM
cfg = Qwen3Config(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                  num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                  rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True)
torch.manual_seed(0)
with torch.device("cuda"):
    m = Qwen3ForCausalLM(cfg).to(torch.bfloat16)
m.save_pretrained(sys.argv[1])
