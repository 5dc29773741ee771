//go:build amd64 && !purego

#include "textflag.h"

// func indexBytePair(s []byte, a, b byte) int
//
// Compares 32 bytes at a time with a and with b (VPCMPEQB), ORs the two
// masks and stops at the lowest set bit. The bytes after the last full
// step are checked by one more step that ends at the end of s (it
// overlaps bytes already found free of a and b); s shorter than 32 bytes
// is scanned a byte at a time. Only bytes of s are read.
TEXT ·indexBytePair(SB), NOSPLIT, $0-40
	MOVQ    s_base+0(FP), SI
	MOVQ    s_len+8(FP), BX
	MOVBLZX a+24(FP), AX
	MOVBLZX b+25(FP), CX
	MOVQ    SI, DI
	CMPQ    BX, $32
	JB      short

	MOVD         AX, X0
	VPBROADCASTB X0, Y0
	MOVD         CX, X1
	VPBROADCASTB X1, Y1
	LEAQ         -32(SI)(BX*1), R11 // start of the last full step

loop:
	VMOVDQU   (DI), Y2
	VPCMPEQB  Y0, Y2, Y3
	VPCMPEQB  Y1, Y2, Y4
	VPOR      Y3, Y4, Y4
	VPMOVMSKB Y4, DX
	TESTL     DX, DX
	JNZ       found
	ADDQ      $32, DI
	CMPQ      DI, R11
	JBE       loop

	// Fewer than 32 bytes left: the last step, ending at the end of s.
	LEAQ      (SI)(BX*1), R12
	CMPQ      DI, R12
	JAE       none
	MOVQ      R11, DI
	VMOVDQU   (DI), Y2
	VPCMPEQB  Y0, Y2, Y3
	VPCMPEQB  Y1, Y2, Y4
	VPOR      Y3, Y4, Y4
	VPMOVMSKB Y4, DX
	TESTL     DX, DX
	JNZ       found

none:
	VZEROUPPER
	MOVQ $-1, ret+32(FP)
	RET

found:
	BSFL       DX, DX
	SUBQ       SI, DI
	ADDQ       DX, DI
	VZEROUPPER
	MOVQ       DI, ret+32(FP)
	RET

short:
	TESTQ BX, BX
	JEQ   shortnone

shortloop:
	MOVB (DI), DX
	CMPB DL, AL
	JEQ  shortfound
	CMPB DL, CL
	JEQ  shortfound
	INCQ DI
	DECQ BX
	JNZ  shortloop

shortnone:
	MOVQ $-1, ret+32(FP)
	RET

shortfound:
	SUBQ SI, DI
	MOVQ DI, ret+32(FP)
	RET
