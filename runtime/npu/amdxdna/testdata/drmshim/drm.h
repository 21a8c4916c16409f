/*
 * A minimal stand-in for the kernel's include/uapi/drm/drm.h, used by
 * TestHeaderLayouts only when no drm.h is installed (Debian: libdrm-dev's
 * /usr/include/libdrm/drm.h, or linux-libc-dev >= 6.14's /usr/include/drm).
 * It declares just what amdxdna_accel.h and the test need, written from the
 * DRM uAPI's documented layouts: the ioctl macros, drm_version,
 * drm_gem_close and drm_syncobj_timeline_wait.
 */
#ifndef XDNA_DRM_SHIM_H
#define XDNA_DRM_SHIM_H
#include <linux/types.h>
#include <linux/ioctl.h>

#define DRM_IOCTL_BASE   'd'
#define DRM_IOW(nr, type)  _IOW(DRM_IOCTL_BASE, nr, type)
#define DRM_IOWR(nr, type) _IOWR(DRM_IOCTL_BASE, nr, type)
#define DRM_COMMAND_BASE 0x40

struct drm_version {
	int version_major;
	int version_minor;
	int version_patchlevel;
	__kernel_size_t name_len;
	char *name;
	__kernel_size_t date_len;
	char *date;
	__kernel_size_t desc_len;
	char *desc;
};

struct drm_gem_close {
	__u32 handle;
	__u32 pad;
};

struct drm_syncobj_timeline_wait {
	__u64 handles;
	__u64 points;
	__s64 timeout_nsec;
	__u32 count_handles;
	__u32 flags;
	__u32 first_signaled;
	__u32 pad;
	__u64 deadline_nsec;
};

#define DRM_IOCTL_VERSION               DRM_IOWR(0x00, struct drm_version)
#define DRM_IOCTL_GEM_CLOSE             DRM_IOW(0x09, struct drm_gem_close)
#define DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT DRM_IOWR(0xCA, struct drm_syncobj_timeline_wait)
#endif
