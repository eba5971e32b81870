"""``numba.cuda.memory_management``: numba.cuda's NRT (its device-side allocator for arrays made in kernels).
numba-metal has no NRT (docs/limitations.md: array methods that allocate in kernels are not supported)."""
