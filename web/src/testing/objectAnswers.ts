// Real answers of the demo gateway (`nac demo`, namespace team-a), trimmed, for the restore,
// storage-location and schedule tests: backups to restore from, restores (their description,
// results, log and history), storage locations and schedules. Only tests import it.
import type {
  Description,
  NonAdminBackup,
  NonAdminBackupStorageLocation,
  NonAdminRestore,
  NonAdminSchedule,
  OperationDetail,
  OperationPage,
} from '../api/types';
import type { ListAnswer } from './gateway';

/** The conditions of both demo backups (accepted and queued in the same second). */
const backupConditions = [
  {
    "lastTransitionTime": "2026-11-23T05:58:54Z",
    "message": "backup accepted",
    "reason": "BackupAccepted",
    "status": "True",
    "type": "Accepted"
  },
  {
    "lastTransitionTime": "2026-11-23T05:58:54Z",
    "message": "Created Velero Backup object",
    "reason": "BackupScheduled",
    "status": "True",
    "type": "Queued"
  }
];

/** A Completed backup of team-a as the demo answers it (its Velero backup's names, times and item count vary). */
function completedDemoBackup(name: string, resourceVersion: string, uid: string, veleroName: string, times: { start: string; completion: string; expiration: string }, items: number): NonAdminBackup {
  return {
    "apiVersion": "oadp.openshift.io/v1alpha1",
    "kind": "NonAdminBackup",
    "metadata": {
      "creationTimestamp": "2026-11-23T05:58:54Z",
      "finalizers": [
        "nonadminbackup.oadp.openshift.io/finalizer"
      ],
      "generation": 1,
      name,
      "namespace": "team-a",
      resourceVersion,
      uid
    },
    "spec": {
      "backupSpec": {
        "includedNamespaces": [
          "team-a"
        ]
      }
    },
    "status": {
      "veleroBackup": {
        "spec": {
          "includedNamespaces": [
            "team-a"
          ],
          "storageLocation": "default"
        },
        "status": {
          "version": 1,
          "formatVersion": "1.1.0",
          "expiration": times.expiration,
          "phase": "Completed",
          "startTimestamp": times.start,
          "completionTimestamp": times.completion,
          "warnings": 0,
          "errors": 0,
          "progress": {
            "totalItems": items,
            "itemsBackedUp": items
          }
        },
        "nacuuid": veleroName,
        "name": veleroName,
        "namespace": "openshift-adp"
      },
      "queueInfo": {
        "estimatedQueuePosition": 0
      },
      "phase": "Created",
      "conditions": backupConditions
    }
  } satisfies NonAdminBackup;
}

export const backupUiHist1 = completedDemoBackup(
  'ui-hist-1',
  '141',
  '190b5942-88bb-4412-8790-5f17e90e21df',
  'team-a-ui-hist-1-6bd66a9e-1d7b-42c5-af1f-b68dd2d78e23',
  { start: '2026-11-23T05:58:54Z', completion: '2026-11-23T05:58:55Z', expiration: '2026-12-23T05:58:54Z' },
  11,
);

export const backupList = [
  backupUiHist1,
  completedDemoBackup(
    'ui-hist-2',
    '164',
    '6c3e89c4-d5c0-4bc3-9cf8-46646a61d855',
    'team-a-ui-hist-2-e683f7f8-5a46-4171-aa26-8dcdf701c34c',
    { start: '2026-11-23T05:58:55Z', completion: '2026-11-23T05:58:57Z', expiration: '2026-12-23T05:58:55Z' },
    14,
  ),
];

export const restoreCompleted = {
  "apiVersion": "oadp.openshift.io/v1alpha1",
  "kind": "NonAdminRestore",
  "metadata": {
    "creationTimestamp": "2026-11-23T05:59:02Z",
    "finalizers": [
      "nonadminrestore.oadp.openshift.io/finalizer"
    ],
    "generation": 1,
    "name": "r-probe-1",
    "namespace": "team-a",
    "resourceVersion": "232",
    "uid": "e869bf36-96fd-4166-b2f4-c96c5b89e3d4"
  },
  "spec": {
    "restoreSpec": {
      "backupName": "ui-hist-1",
      "restorePVs": true,
      "existingResourcePolicy": "update"
    }
  },
  "status": {
    "veleroRestore": {
      "status": {
        "phase": "Completed",
        "warnings": 0,
        "errors": 0,
        "startTimestamp": "2026-11-23T05:59:02Z",
        "completionTimestamp": "2026-11-23T05:59:03Z",
        "progress": {
          "totalItems": 9,
          "itemsRestored": 9
        }
      },
      "name": "team-a-r-probe-1-3539f6b5-bd34-4107-8dcc-91e875612e62",
      "nacuuid": "team-a-r-probe-1-3539f6b5-bd34-4107-8dcc-91e875612e62",
      "namespace": "openshift-adp"
    },
    "queueInfo": {
      "estimatedQueuePosition": 0
    },
    "phase": "Created",
    "conditions": [
      {
        "lastTransitionTime": "2026-11-23T05:59:02Z",
        "message": "restore accepted",
        "reason": "RestoreAccepted",
        "status": "True",
        "type": "Accepted"
      },
      {
        "lastTransitionTime": "2026-11-23T05:59:02Z",
        "message": "Created Velero Restore object",
        "reason": "RestoreScheduled",
        "status": "True",
        "type": "Queued"
      }
    ]
  }
} satisfies NonAdminRestore;

export const restorePartiallyFailed = {
  "apiVersion": "oadp.openshift.io/v1alpha1",
  "kind": "NonAdminRestore",
  "metadata": {
    "creationTimestamp": "2026-11-23T06:07:14Z",
    "finalizers": [
      "nonadminrestore.oadp.openshift.io/finalizer"
    ],
    "generation": 1,
    "name": "r2",
    "namespace": "team-a",
    "resourceVersion": "182",
    "uid": "59104173-1c1e-420b-909b-c9df03eb79f9"
  },
  "spec": {
    "restoreSpec": {
      "backupName": "b1"
    }
  },
  "status": {
    "veleroRestore": {
      "status": {
        "phase": "PartiallyFailed",
        "warnings": 0,
        "errors": 1,
        "startTimestamp": "2026-11-23T06:07:14Z",
        "completionTimestamp": "2026-11-23T06:07:15Z",
        "progress": {
          "totalItems": 9,
          "itemsRestored": 9
        }
      },
      "name": "team-a-r2-4276a7a2-89bc-4ac4-a9e5-2f1cb8c5f907",
      "nacuuid": "team-a-r2-4276a7a2-89bc-4ac4-a9e5-2f1cb8c5f907",
      "namespace": "openshift-adp"
    },
    "queueInfo": {
      "estimatedQueuePosition": 0
    },
    "phase": "Created",
    "conditions": [
      {
        "lastTransitionTime": "2026-11-23T06:07:14Z",
        "message": "restore accepted",
        "reason": "RestoreAccepted",
        "status": "True",
        "type": "Accepted"
      },
      {
        "lastTransitionTime": "2026-11-23T06:07:14Z",
        "message": "Created Velero Restore object",
        "reason": "RestoreScheduled",
        "status": "True",
        "type": "Queued"
      }
    ]
  }
} satisfies NonAdminRestore;

export const describePartiallyFailed = {
  "kind": "NonAdminRestore",
  "namespace": "team-a",
  "name": "r1",
  "requestPhase": "Created",
  "veleroPhase": "PartiallyFailed",
  "queuePosition": null,
  "eta": null,
  "conditions": [
    {
      "lastTransitionTime": "2026-11-23T06:07:09Z",
      "message": "restore accepted",
      "reason": "RestoreAccepted",
      "status": "True",
      "type": "Accepted"
    },
    {
      "lastTransitionTime": "2026-11-23T06:07:09Z",
      "message": "Created Velero Restore object",
      "reason": "RestoreScheduled",
      "status": "True",
      "type": "Queued"
    }
  ],
  "effectiveSpec": {
    "backupName": "b1",
    "existingResourcePolicy": "update"
  },
  "progress": {
    "totalItems": 9,
    "itemsRestored": 9
  },
  "started": "2026-11-23T06:07:09Z",
  "completed": "2026-11-23T06:07:10Z",
  "expiration": null,
  "errors": 1,
  "warnings": 0,
  "failureReason": null,
  "validationErrors": [],
  "deletion": null,
  "resourceList": null,
  "resourceListUnavailable": null
} satisfies Description;

export const resultsPartiallyFailed = {
  "errors": {
    "velero": [
      "simulated restore error (sim.velero.nac.openshift.io/outcome=partially-fail)"
    ]
  },
  "warnings": {}
};

export const logPartiallyFailed = "time=\"2026-11-23T06:07:09Z\" level=info msg=\"starting restore\" restore=openshift-adp/team-a-r1-d04fce93-b29c-41c8-b344-6861b0a94011 backup=team-a-b1-0cd2f1c3-ac20-43f3-bd9a-92d2d302312b\ntime=\"2026-11-23T06:07:09Z\" level=info msg=\"Restored item\" restore=openshift-adp/team-a-r1-d04fce93-b29c-41c8-b344-6861b0a94011 resource=persistentvolumeclaims name=web-data\ntime=\"2026-11-23T06:07:10Z\" level=info msg=\"Restored item\" restore=openshift-adp/team-a-r1-d04fce93-b29c-41c8-b344-6861b0a94011 resource=serviceaccounts name=ci-bot\ntime=\"2026-11-23T06:07:10Z\" level=info msg=\"Restored item\" restore=openshift-adp/team-a-r1-d04fce93-b29c-41c8-b344-6861b0a94011 resource=serviceaccounts name=default\ntime=\"2026-11-23T06:07:10Z\" level=info msg=\"Restored item\" restore=openshift-adp/team-a-r1-d04fce93-b29c-41c8-b344-6861b0a94011 resource=rolebindings.rbac.authorization.k8s.io name=alice-admin\ntime=\"2026-11-23T06:07:10Z\" level=info msg=\"Restored item\" restore=openshift-adp/team-a-r1-d04fce93-b29c-41c8-b344-6861b0a94011 resource=rolebindings.rbac.authorization.k8s.io name=ci-bot-backup-creator\ntime=\"2026-11-23T06:07:10Z\" level=info msg=\"Restored item\" restore=openshift-adp/team-a-r1-d04fce93-b29c-41c8-b344-6861b0a94011 resource=secrets name=web-credentials\ntime=\"2026-11-23T06:07:10Z\" level=info msg=\"Restored item\" restore=openshift-adp/team-a-r1-d04fce93-b29c-41c8-b344-6861b0a94011 resource=configmaps name=web-config\ntime=\"2026-11-23T06:07:10Z\" level=info msg=\"Restored item\" restore=openshift-adp/team-a-r1-d04fce93-b29c-41c8-b344-6861b0a94011 resource=services name=web\ntime=\"2026-11-23T06:07:10Z\" level=info msg=\"Restored item\" restore=openshift-adp/team-a-r1-d04fce93-b29c-41c8-b344-6861b0a94011 resource=deployments.apps name=web\ntime=\"2026-11-23T06:07:10Z\" level=info msg=\"restore completed\" restore=openshift-adp/team-a-r1-d04fce93-b29c-41c8-b344-6861b0a94011\n";

export const historyOfRestore = {
  "items": [
    {
      "id": "e869bf36-96fd-4166-b2f4-c96c5b89e3d4",
      "namespace": "team-a",
      "kind": "restore",
      "name": "r-probe-1",
      "uid": "e869bf36-96fd-4166-b2f4-c96c5b89e3d4",
      "veleroName": "team-a-r-probe-1-3539f6b5-bd34-4107-8dcc-91e875612e62",
      "parentName": "ui-hist-1",
      "requester": "alice",
      "createdAt": "2026-11-23T05:59:02.000Z",
      "startedAt": "2026-11-23T05:59:02.000Z",
      "completedAt": "2026-11-23T05:59:03.000Z",
      "phase": "Completed",
      "phaseRank": 200,
      "nacPhase": "Created",
      "itemsTotal": 9,
      "itemsDone": 9,
      "warnings": 0,
      "errors": 0,
      "failureReason": null,
      "queuePosition": 0,
      "deletedAt": null,
      "durationMs": 1000
    }
  ]
} satisfies OperationPage;

export const historyDetail = {
  "operation": historyOfRestore.items[0],
  "timeline": [
    {
      "at": "2026-11-23T05:59:02.605Z",
      "attribute": "phase",
      "value": "New"
    },
    {
      "at": "2026-11-23T05:59:02.605Z",
      "attribute": "condition/Accepted",
      "value": "True",
      "reason": "RestoreAccepted",
      "message": "restore accepted"
    },
    {
      "at": "2026-11-23T05:59:02.616Z",
      "attribute": "veleroPhase",
      "value": "New"
    },
    {
      "at": "2026-11-23T05:59:02.620Z",
      "attribute": "phase",
      "value": "Created"
    },
    {
      "at": "2026-11-23T05:59:02.620Z",
      "attribute": "queuePosition",
      "value": "1"
    },
    {
      "at": "2026-11-23T05:59:02.620Z",
      "attribute": "condition/Queued",
      "value": "True",
      "reason": "RestoreScheduled",
      "message": "Created Velero Restore object"
    },
    {
      "at": "2026-11-23T05:59:02.621Z",
      "attribute": "veleroPhase",
      "value": "InProgress"
    },
    {
      "at": "2026-11-23T05:59:03.564Z",
      "attribute": "veleroPhase",
      "value": "Finalizing"
    },
    {
      "at": "2026-11-23T05:59:03.564Z",
      "attribute": "veleroPhase",
      "value": "Completed"
    },
    {
      "at": "2026-11-23T05:59:03.567Z",
      "attribute": "queuePosition",
      "value": "0"
    }
  ]
} satisfies OperationDetail;

export const locationList = {
  "apiVersion": "oadp.openshift.io/v1alpha1",
  "kind": "NonAdminBackupStorageLocationList",
  "metadata": {},
  "items": [
    {
      "apiVersion": "oadp.openshift.io/v1alpha1",
      "kind": "NonAdminBackupStorageLocation",
      "metadata": {
        "creationTimestamp": "2026-11-23T05:59:34Z",
        "generation": 1,
        "name": "loc-probe",
        "namespace": "team-a",
        "resourceVersion": "469",
        "uid": "48619921-9bdd-4916-80cb-c4032121e95a"
      },
      "spec": {
        "backupStorageLocationSpec": {
          "provider": "aws",
          "config": {
            "region": "us-east-1"
          },
          "credential": {
            "key": "cloud",
            "name": "web-credentials"
          },
          "objectStorage": {
            "bucket": "my-bucket",
            "prefix": "team-a"
          },
          "default": false,
          "accessMode": "ReadWrite"
        }
      },
      "status": {
        "phase": "BackingOff",
        "conditions": [
          {
            "lastTransitionTime": "2026-11-23T05:59:34Z",
            "message": "spec.backupStorageLocationSpec.credential.key: Secret \"web-credentials\" has no key \"cloud\"",
            "reason": "BslSpecValidation",
            "status": "False",
            "type": "Accepted"
          }
        ]
      }
    }
  ],
  "approvals": {
    "loc-probe": "NotRequired"
  }
} satisfies ListAnswer<NonAdminBackupStorageLocation>;

export const scheduleList = {
  "apiVersion": "oadp.openshift.io/v1alpha1",
  "kind": "NonAdminScheduleList",
  "metadata": {},
  "items": [
    {
      "apiVersion": "oadp.openshift.io/v1alpha1",
      "kind": "NonAdminSchedule",
      "metadata": {
        "creationTimestamp": "2026-11-23T05:59:40Z",
        "finalizers": [
          "nonadminschedule.oadp.openshift.io/finalizer"
        ],
        "generation": 3,
        "name": "sched-probe",
        "namespace": "team-a",
        "resourceVersion": "789",
        "uid": "c1d39a35-267a-41d9-804f-e0c8f7c4692d"
      },
      "spec": {
        "schedule": "*/5 * * * *",
        "paused": false,
        "skipImmediately": true,
        "template": {
          "backupSpec": {
            "excludedResources": [
              "secrets"
            ],
            "ttl": "24h0m0s"
          }
        }
      },
      "status": {
        "veleroSchedule": {
          "status": {
            "phase": "Enabled",
            "lastBackup": "2026-11-23T06:05:00Z"
          },
          "nacuuid": "team-a-sched-probe-ed721843-00cb-4f96-88b5-84bd557e69b8",
          "name": "team-a-sched-probe-ed721843-00cb-4f96-88b5-84bd557e69b8",
          "namespace": "openshift-adp"
        },
        "nextRun": "2026-11-23T06:10:00Z",
        "lastBackup": {
          "name": "sched-probe-20261123060500",
          "veleroBackupName": "team-a-sched-probe-ed721843-00cb-4f96-88b5-84bd557e69b8-20261123060500",
          "phase": "Completed",
          "startTimestamp": "2026-11-23T06:05:00Z",
          "completionTimestamp": "2026-11-23T06:05:05Z",
          "expiration": "2026-11-24T06:05:00Z"
        },
        "recentBackups": [
          {
            "name": "sched-probe-20261123060500",
            "veleroBackupName": "team-a-sched-probe-ed721843-00cb-4f96-88b5-84bd557e69b8-20261123060500",
            "phase": "Completed",
            "startTimestamp": "2026-11-23T06:05:00Z",
            "completionTimestamp": "2026-11-23T06:05:05Z",
            "expiration": "2026-11-24T06:05:00Z"
          },
          {
            "name": "sched-probe-20261123060000",
            "veleroBackupName": "team-a-sched-probe-ed721843-00cb-4f96-88b5-84bd557e69b8-20261123060000",
            "phase": "Completed",
            "startTimestamp": "2026-11-23T06:00:00Z",
            "completionTimestamp": "2026-11-23T06:00:05Z",
            "expiration": "2026-11-24T06:00:00Z"
          }
        ],
        "phase": "Created",
        "conditions": [
          {
            "lastTransitionTime": "2026-11-23T05:59:40Z",
            "message": "schedule accepted",
            "reason": "ScheduleAccepted",
            "status": "True",
            "type": "Accepted"
          }
        ]
      }
    }
  ]
} satisfies ListAnswer<NonAdminSchedule>;
