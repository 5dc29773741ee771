//go:build amd64 && !purego

#include "textflag.h"

// EITHERSTEP: DX gets the mask of the 32 bytes at DI that equal the byte
// broadcast in Y0 or the one in Y1.
#define EITHERSTEP \
	VMOVDQU   (DI), Y2; \
	VPCMPEQB  Y0, Y2, Y3; \
	VPCMPEQB  Y1, Y2, Y4; \
	VPOR      Y3, Y4, Y4; \
	VPMOVMSKB Y4, DX

// PAIRSTEP: DX gets the mask of the 32 positions i from DI where the byte
// at i equals Y0's or Y1's and the byte at i+R8 equals Y2's or Y3's.
#define PAIRSTEP \
	VMOVDQU   (DI), Y4; \
	VMOVDQU   (DI)(R8*1), Y5; \
	VPCMPEQB  Y0, Y4, Y6; \
	VPCMPEQB  Y1, Y4, Y7; \
	VPOR      Y6, Y7, Y6; \
	VPCMPEQB  Y2, Y5, Y7; \
	VPCMPEQB  Y3, Y5, Y8; \
	VPOR      Y7, Y8, Y7; \
	VPAND     Y6, Y7, Y6; \
	VPMOVMSKB Y6, DX

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
	EITHERSTEP
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
	EITHERSTEP
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

// func indexPairAt(s []byte, a1, b1, a2, b2 byte, d int) int
//
// The first i with s[i] one of a1, b1 and s[i+d] one of a2, b2 (rg's
// "packed pair"), or -1; d > 0. Each step compares the 32 bytes at i
// with a1 and b1 and the 32 at i+d with a2 and b2 and ANDs the masks, so
// a byte common in text on its own is no stop unless its partner is at
// the right distance. The last positions are checked by one more step
// that ends where the last i+d is the last byte of s; fewer than 32
// positions are checked one at a time. Only bytes of s are read.
TEXT ·indexPairAt(SB), NOSPLIT, $0-48
	MOVQ    s_base+0(FP), SI
	MOVQ    s_len+8(FP), BX
	MOVBLZX a1+24(FP), AX
	MOVBLZX b1+25(FP), CX
	MOVBLZX a2+26(FP), R13
	MOVBLZX b2+27(FP), R14
	MOVQ    d+32(FP), R8
	MOVQ    BX, R9
	SUBQ    R8, R9 // positions i: 0 <= i < len-d
	JLE     pnone
	MOVQ    SI, DI
	CMPQ    R9, $32
	JB      pshort

	MOVD         AX, X0
	VPBROADCASTB X0, Y0
	MOVD         CX, X1
	VPBROADCASTB X1, Y1
	MOVD         R13, X2
	VPBROADCASTB X2, Y2
	MOVD         R14, X3
	VPBROADCASTB X3, Y3
	LEAQ         -32(SI)(R9*1), R11 // start of the last full step

ploop:
	PAIRSTEP
	TESTL     DX, DX
	JNZ       pfound
	ADDQ      $32, DI
	CMPQ      DI, R11
	JBE       ploop

	LEAQ      (SI)(R9*1), R12
	CMPQ      DI, R12
	JAE       pnonez
	MOVQ      R11, DI
	PAIRSTEP
	TESTL     DX, DX
	JNZ       pfound

pnonez:
	VZEROUPPER

pnone:
	MOVQ $-1, ret+40(FP)
	RET

pfound:
	BSFL       DX, DX
	SUBQ       SI, DI
	ADDQ       DX, DI
	VZEROUPPER
	MOVQ       DI, ret+40(FP)
	RET

pshort:
	MOVB (DI), DX
	CMPB DL, AL
	JEQ  pfirst
	CMPB DL, CL
	JNE  pnext

pfirst:
	MOVB (DI)(R8*1), DX
	CMPB DL, R13B
	JEQ  pshortfound
	CMPB DL, R14B
	JEQ  pshortfound

pnext:
	INCQ DI
	DECQ R9
	JNZ  pshort
	JMP  pnone

pshortfound:
	SUBQ SI, DI
	MOVQ DI, ret+40(FP)
	RET
