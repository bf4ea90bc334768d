# The "until_stopped" guest of boot_sectors.py: a boot sector that spins
# every vCPU until the first byte of the disk's second sector is not 0, then
# halts them. Assembled with:
#   as --32 -o until_stopped.o until_stopped.s
#   ld -m elf_i386 -e start -Ttext 0x7c00 --oformat binary -o until_stopped.bin until_stopped.o
.code16
.globl start
start:
    cli
    xor %ax, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov $0x7c00, %sp
    mov %dl, 0x7dfd            # the boot drive, kept for every read
    movb $0, 0x7e00            # the flag the other vCPUs watch: clear
    # The other vCPUs' code to 0x8000, where a SIPI of vector 8 starts them.
    mov $ap, %si
    mov $0x8000, %di
    mov $(ap_end - ap), %cx
    rep movsb
    # Unreal mode: fs with a 4 GiB limit, to reach the local APIC.
    lgdt gdtr
    mov %cr0, %eax
    or $1, %al
    mov %eax, %cr0
    mov $8, %bx
    mov %bx, %fs
    and $0xfe, %al
    mov %eax, %cr0
    xor %bx, %bx
    mov %bx, %fs
    # INIT, then SIPI twice, to every other vCPU (ICR low; shorthand all-but-self).
    mov $0xfee00300, %ebx
    movl $0x000c4500, %fs:(%ebx)
    call pause
    movl $0x000c4608, %fs:(%ebx)
    call pause
    movl $0x000c4608, %fs:(%ebx)
    sti
again:
    mov $0x0201, %ax           # read one sector
    mov $0x0002, %cx           # cylinder 0, sector 2
    xor %dh, %dh               # head 0
    mov 0x7dfd, %dl
    mov $0x7e00, %bx
    int $0x13
    cmpb $0, 0x7e00
    jne stop
    # 2^20 turns between reads: under TCG a few milliseconds; a nested
    # hypervisor emulates real-mode code, about a second.
    mov $0x00100000, %ecx
spin:
    dec %ecx
    jnz spin
    jmp again
stop:
    cli
    hlt
    jmp stop
pause:
    mov $0x00100000, %ecx
1:  dec %ecx
    jnz 1b
    ret
# Every other vCPU: spin until the flag at 0x7e00 is set, then halt.
ap:
    xor %ax, %ax
    mov %ax, %ds
ap_spin:
    cmpb $0, 0x7e00
    je ap_spin
ap_stop:
    cli
    hlt
    jmp ap_stop
ap_end:
.p2align 3
gdt:
    .quad 0
    .quad 0x00cf92000000ffff   # flat data, 4 GiB
gdtr:
    .word 15
    .long gdt
