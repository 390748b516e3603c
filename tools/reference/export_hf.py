#!/usr/bin/env python3
"""Models as users bring them: HuggingFace transformers and torchvision.

Regenerate everything under test/Fixtures/hf/ (from the repository root) with

    python3 tools/reference/export_hf.py [FAMILY ...]

This needs torch, transformers, torchvision and numpy (pip); spmdc and its
tests do not: they read only the files this writes.  Every family is a small
random-init config of the library's own model class, built after
torch.manual_seed(0) in float32 and put in training mode, wrapped so that
forward(inputs..., labels) returns the model's own loss, and exported exactly
as docs/pytorch.md says:

    ep = torch.export.export(model, args).run_decompositions()
    torch.export.save(ep, "<family>.pt2")

with no rewriting of the model.  Its data are drawn after
torch.manual_seed(1).  For each family it writes

  <family>.pt2                   the archive
  <family>.data.safetensors      the user inputs by their export names
  <family>.expected.safetensors  "loss" (at the initial weights) and every
                                 state-dict entry after one
                                 torch.optim.AdamW step (lr 1e-3, betas
                                 (0.9, 0.999), eps 1e-8, weight_decay 0.01):
                                 parameters under every name of a tied
                                 weight, and the buffers the step updates
                                 (BatchNorm running statistics)
  <family>.grads.safetensors     the gradient at the initial weights, per
                                 parameter name
  <family>.meta.json             versions, loss, input names, ATen ops,
                                 the state dict's keys (what --save-params
                                 must write for load_state_dict(strict=True))

or export any family, those below or the EXTRA_FAMILIES checked outside the
suite, into another directory with

    python3 tools/reference/export_hf.py --out DIR FAMILY ...

Families (docs/pytorch.md has the table):

  gpt2     transformers GPT2LMHeadModel, attn_implementation="eager"
  llama    transformers LlamaForCausalLM (grouped-query attention)
  qwen2    transformers Qwen2ForCausalLM (q/k/v biases)
  mistral  transformers MistralForCausalLM (sliding-window mask)
  bert     transformers BertForMaskedLM (padding_idx, -100 labels)
  t5       transformers T5ForConditionalGeneration (_shift_right)
  bart     transformers BartForConditionalGeneration (shift_tokens_right)
  vit      transformers ViTForImageClassification (patch convolution)
  cnn      a small CNN: grouped, strided and dilated convolutions,
           BatchNorm2d, max pooling, adaptive average pooling
  resnet   torchvision's ResNet built from torchvision's BasicBlock at a
           small width (ResNet-18's layers with fewer channels, so the
           fixture stays small): running statistics compared too
"""

import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_pt2 import write_safetensors  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     "..", ".."))
OUT = os.path.join(ROOT, "test", "Fixtures", "hf")
ADAMW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
VOCAB, SEQ, BATCH = 96, 16, 4


class LossOf(nn.Module):
    """forward(input_ids, labels) -> the model's own `labels=` loss."""

    def __init__(self, model, input_name="input_ids"):
        super().__init__()
        self.m = model
        self.input_name = input_name

    def forward(self, inputs, labels):
        return self.m(**{self.input_name: inputs}, labels=labels).loss


class ClassifierLoss(nn.Module):
    """A torchvision-style classifier with cross-entropy."""

    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, images, labels):
        return F.cross_entropy(self.m(images), labels)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        # No bias before a BatchNorm: its gradient is zero in exact
        # arithmetic (the norm subtracts the mean), rounding noise here.
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=2, dilation=2,
                               groups=2, bias=True)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = self.bn2(F.relu(self.conv2(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def small_resnet():
    from torchvision.models.resnet import BasicBlock, ResNet

    model = ResNet(BasicBlock, [2, 2, 2, 2], num_classes=10)
    # ResNet-18's structure at width 8 instead of 64: rebuild the layers
    # with torchvision's own code paths.
    model.inplanes = 8
    model.conv1 = nn.Conv2d(3, 8, kernel_size=7, stride=2, padding=3,
                            bias=False)
    model.bn1 = nn.BatchNorm2d(8)
    model.layer1 = model._make_layer(BasicBlock, 8, 2)
    model.layer2 = model._make_layer(BasicBlock, 16, 2, stride=2)
    model.layer3 = model._make_layer(BasicBlock, 16, 1, stride=2)
    model.layer4 = model._make_layer(BasicBlock, 32, 1, stride=2)
    model.fc = nn.Linear(32, 10)
    return model


def hf(name):
    import transformers as T

    common = dict(vocab_size=VOCAB)
    small = dict(common, hidden_size=32, num_hidden_layers=2,
                 num_attention_heads=4, max_position_embeddings=SEQ)
    decoder = dict(common, hidden_size=32, intermediate_size=64,
                   num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=SEQ)
    if name == "gpt2":
        return T.GPT2LMHeadModel(T.GPT2Config(
            n_positions=SEQ, n_embd=32, n_layer=2, n_head=4, resid_pdrop=0.0,
            embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0,
            attn_implementation="eager", **common))
    if name == "llama":
        return T.LlamaForCausalLM(T.LlamaConfig(**decoder))
    if name == "qwen2":
        return T.Qwen2ForCausalLM(T.Qwen2Config(**decoder))
    if name == "mistral":
        return T.MistralForCausalLM(T.MistralConfig(sliding_window=8,
                                                    **decoder))
    if name == "bert":
        return T.BertForMaskedLM(T.BertConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=SEQ,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
            **common))
    if name == "t5":
        return T.T5ForConditionalGeneration(T.T5Config(
            d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
            dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0,
            **common))
    if name == "bart":
        return T.BartForConditionalGeneration(T.BartConfig(
            d_model=32, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=64, decoder_ffn_dim=64,
            max_position_embeddings=SEQ, dropout=0.0, attention_dropout=0.0,
            activation_dropout=0.0, **common))
    if name == "vit":
        return T.ViTForImageClassification(T.ViTConfig(
            image_size=16, patch_size=4, num_channels=3, hidden_size=32,
            num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            num_labels=10, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0))
    if name == "neox":
        return T.GPTNeoXForCausalLM(T.GPTNeoXConfig(
            intermediate_size=64, rotary_pct=0.25, hidden_dropout=0.0,
            attention_dropout=0.0, **small))
    if name == "opt":
        return T.OPTForCausalLM(T.OPTConfig(
            ffn_dim=64, word_embed_proj_dim=32, dropout=0.0,
            attention_dropout=0.0, pad_token_id=1, **small))
    if name == "phi":
        return T.PhiForCausalLM(T.PhiConfig(
            intermediate_size=64, partial_rotary_factor=0.5, resid_pdrop=0.0,
            embd_pdrop=0.0, attention_dropout=0.0, **small))
    if name == "gemma":
        return T.GemmaForCausalLM(T.GemmaConfig(
            intermediate_size=64, num_key_value_heads=1, head_dim=8,
            **small))
    if name == "falcon":
        return T.FalconForCausalLM(T.FalconConfig(
            new_decoder_architecture=False, multi_query=True,
            parallel_attn=True, hidden_dropout=0.0, attention_dropout=0.0,
            **small))
    if name == "roberta":
        return T.RobertaForMaskedLM(T.RobertaConfig(
            hidden_size=32, intermediate_size=64, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=SEQ + 2,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
            **common))
    if name == "bloom":
        return T.BloomForCausalLM(T.BloomConfig(
            hidden_size=32, n_layer=2, n_head=4, hidden_dropout=0.0,
            attention_dropout=0.0, **common))
    if name == "gptj":
        return T.GPTJForCausalLM(T.GPTJConfig(
            n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=SEQ,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **common))
    if name == "gptneo":
        return T.GPTNeoForCausalLM(T.GPTNeoConfig(
            hidden_size=32, num_layers=2, num_heads=4,
            attention_types=[[["global", "local"], 1]], window_size=4,
            max_position_embeddings=SEQ, embed_dropout=0.0,
            attention_dropout=0.0, resid_dropout=0.0, **common))
    if name == "electra":
        return T.ElectraForMaskedLM(T.ElectraConfig(
            embedding_size=16, hidden_size=32, intermediate_size=64,
            num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0, **common))
    if name == "mixtral":
        return T.MixtralForCausalLM(T.MixtralConfig(
            num_local_experts=4, num_experts_per_tok=2, **decoder))
    if name == "distilbert":
        return T.DistilBertForMaskedLM(T.DistilBertConfig(
            dim=32, hidden_dim=64, n_layers=2, n_heads=4,
            max_position_embeddings=SEQ, dropout=0.0, attention_dropout=0.0,
            **common))
    raise KeyError(name)


def torchvision_model(name):
    """torchvision's own builders at small widths, dropout off."""
    import torchvision.models as M

    if name == "mobilenet":
        return M.mobilenet_v2(num_classes=10, width_mult=0.25, dropout=0.0)
    if name == "squeezenet":
        return M.squeezenet1_1(num_classes=10, dropout=0.0)
    if name == "densenet":
        return M.DenseNet(growth_rate=4, block_config=(2, 2),
                          num_init_features=8, bn_size=2, num_classes=10)
    if name == "convnext":
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt
        return ConvNeXt([CNBlockConfig(8, 16, 1), CNBlockConfig(16, None, 1)],
                        stochastic_depth_prob=0.0, num_classes=10)
    if name == "swin":
        from torchvision.models.swin_transformer import SwinTransformer
        return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2],
                               num_heads=[2, 4], window_size=[2, 2],
                               stochastic_depth_prob=0.0, num_classes=10)
    if name == "shufflenet":
        return M.shufflenet_v2_x0_5(num_classes=10)
    if name == "efficientnet":
        return M.efficientnet_b0(num_classes=10, dropout=0.0,
                                 stochastic_depth_prob=0.0)
    raise KeyError(name)


FAMILIES = ["gpt2", "llama", "qwen2", "mistral", "bert", "t5", "bart", "vit",
            "cnn", "resnet"]
# Checked outside the suite (docs/pytorch.md, "Beyond the fixtures"):
# exported with --out DIR, not into test/Fixtures/hf.
EXTRA_FAMILIES = ["neox", "opt", "phi", "gemma", "falcon", "bloom", "gptj",
                  "gptneo", "mixtral", "roberta", "distilbert", "electra",
                  "mobilenet", "squeezenet", "densenet", "efficientnet",
                  "convnext", "swin", "shufflenet"]
VISION = ["cnn", "resnet", "mobilenet", "squeezenet", "densenet",
          "efficientnet", "convnext", "swin", "shufflenet"]


def build(name):
    torch.manual_seed(0)
    if name == "cnn":
        model = ClassifierLoss(SmallCNN())
    elif name == "resnet":
        model = ClassifierLoss(small_resnet())
    elif name in VISION:
        model = ClassifierLoss(torchvision_model(name))
    elif name == "vit":
        model = LossOf(hf(name), "pixel_values")
    else:
        model = LossOf(hf(name))
    return model.to(torch.float32).train()


def make_data(name):
    torch.manual_seed(1)
    if name in VISION:
        return (torch.randn(BATCH, 3, 32, 32),
                torch.randint(0, 10, (BATCH,)))
    if name == "vit":
        return (torch.randn(BATCH, 3, 16, 16), torch.randint(0, 10, (BATCH,)))
    ids = torch.randint(2, VOCAB, (BATCH, SEQ))
    labels = torch.randint(2, VOCAB, (BATCH, SEQ))
    if name in ("bert", "roberta", "distilbert", "electra"):
        # Masked-LM labels: -100 (ignored) where a token was not masked.
        labels = torch.where(torch.rand(BATCH, SEQ) < 0.5, labels, -100)
    return ids, labels


def reference_step(name, args):
    model = build(name)
    opt = torch.optim.AdamW(model.parameters(), **ADAMW)
    opt.zero_grad()
    loss = model(*args)
    loss.backward()
    grads = {n: p.grad.detach().clone() if p.grad is not None
             else torch.zeros_like(p)
             for n, p in model.named_parameters(remove_duplicate=False)}
    opt.step()
    # The state dict after the step: every name of a tied weight, and the
    # buffers the step updated.
    state = {n: t.detach().clone() for n, t in
             model.state_dict(keep_vars=False).items()}
    return loss.detach(), grads, state


def np_of(t):
    return t.numpy()


def export(name):
    os.makedirs(OUT, exist_ok=True)
    args = make_data(name)
    model = build(name)
    ep = torch.export.export(model, args).run_decompositions()
    path = os.path.join(OUT, name + ".pt2")
    torch.export.save(ep, path)
    ep_loss = float(ep.module()(*args))
    loss, grads, state = reference_step(name, args)
    if abs(ep_loss - float(loss)) > 1e-5 * abs(float(loss)):
        raise SystemExit(f"{name}: exported loss {ep_loss} != eager {loss}")
    user_inputs = [s.arg.name for s in ep.graph_signature.input_specs
                   if s.kind.name == "USER_INPUT"]
    write_safetensors(os.path.join(OUT, name + ".data.safetensors"),
                      {n: np_of(a) for n, a in zip(user_inputs, args)})
    expected = {"loss": np.float32(loss.item())}
    mutated = {s.target for s in ep.graph_signature.output_specs
               if s.kind.name == "BUFFER_MUTATION"}
    params = dict(model.named_parameters(remove_duplicate=False))
    for n, t in state.items():
        if n in params or n in mutated:
            expected[n] = np_of(t)
    write_safetensors(os.path.join(OUT, name + ".expected.safetensors"),
                      expected)
    write_safetensors(os.path.join(OUT, name + ".grads.safetensors"),
                      {n: np_of(g) for n, g in grads.items()})
    ops = sorted({str(n.target) for n in ep.graph.nodes
                  if n.op == "call_function"})
    import transformers
    import torchvision
    meta = dict(command="python3 tools/reference/export_hf.py",
                torch_version=torch.__version__,
                transformers_version=transformers.__version__,
                torchvision_version=torchvision.__version__,
                family=name, loss=float(loss), adamw=ADAMW,
                user_inputs=user_inputs,
                parameter_count=sum(p.numel() for p in model.parameters()),
                mutated_buffers=sorted(mutated), aten_ops=ops,
                state_dict_keys=sorted(model.state_dict().keys()),
                archive_bytes=os.path.getsize(path))
    with open(os.path.join(OUT, name + ".meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"{name}: loss {float(loss):.6f}, {meta['parameter_count']} "
          f"parameters, {os.path.getsize(path)} bytes, {len(ops)} ops")


def main():
    global OUT
    names = sys.argv[1:]
    if names[:1] == ["--out"]:
        if len(names) < 2:
            sys.exit("export_hf.py: --out needs a directory")
        OUT, names = names[1], names[2:]
    for name in names:
        if name not in FAMILIES + EXTRA_FAMILIES:
            sys.exit(f"export_hf.py: unknown family '{name}'; known: "
                     + ", ".join(FAMILIES + EXTRA_FAMILIES))
    for name in names or FAMILIES:
        export(name)


if __name__ == "__main__":
    main()
