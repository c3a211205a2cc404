/* The marshalled pyshim modules (tools/marshal_pyshim.py), linked into the binary. */
	.section .rodata
	.global ps_pyshim_blob
	.global ps_pyshim_blob_end
	.balign 16
ps_pyshim_blob:
	.incbin PYSHIM_BLOB
ps_pyshim_blob_end:
	.section .note.GNU-stack,"",@progbits
