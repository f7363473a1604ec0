"""TVM's ``tvm.contrib.cuda_graph``: a graph executor that replays a model as one CUDA graph."""
