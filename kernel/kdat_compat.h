/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What differs between the kernels kdat builds for (Debian's 6.1 and
 * 6.12), decided by what the kernel being built against provides: Kbuild
 * probes its headers and defines KDAT_HAVE_* (see Kbuild). No version
 * checks elsewhere; a new difference gets a probe and an entry here.
 */
#ifndef KDAT_COMPAT_H
#define KDAT_COMPAT_H

#include <linux/mm.h>

/* <asm/unaligned.h> became <linux/unaligned.h> in 6.12. */
#ifdef KDAT_HAVE_LINUX_UNALIGNED_H
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/* vma->vm_flags is read-only from 6.3: vm_flags_set()/vm_flags_clear(). */
#ifndef KDAT_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

#endif /* KDAT_COMPAT_H */
