"""tp-import's exporter as a package (docs/tp-import.md): PyTorch models to
MLIR linalg-on-tensors through torch-mlir, the weights as `tp.param`
arguments named by the keys their checkpoint stores.

  models          build the model: a Hugging Face folder, a transformers
                  name, or a Python nn.Module
  inputs          example inputs (input_ids, pixel_values, input_features,
                  decoder_input_ids, attention_mask, --input) and outputs
  names           parameters as save_pretrained stores them
  decompositions  rewrites that make torch-mlir's export right
  exporter        torch.export, the rewrites, torch-mlir, the signature
  selfcheck       the export run by tp-run at tp=1 against PyTorch
  cli             the tp-import command

Only cli imports nothing heavy at load time; the others take `torch` as an
argument or import it when called.
"""
