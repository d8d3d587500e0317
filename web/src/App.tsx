// Routes of the console: sign-in when there is no session, else the namespace pages.
import { Bullseye, Spinner } from '@patternfly/react-core';
import { BrowserRouter, Route, Routes } from 'react-router';
import type React from "react";
import { Layout } from './Layout';
import { NamespacesProvider } from './namespaces';
import { SessionProvider, useSession } from './session';
import { t } from './strings';
import SignIn from './pages/SignIn';
import NamespacePicker from './pages/NamespacePicker';
import Overview from './pages/Overview';
import BackupList from './pages/BackupList';
import BackupCreate from './pages/BackupCreate';
import BackupDetail from './pages/BackupDetail';
import RestoreWizard from './pages/RestoreWizard';
import RestoreList from './pages/RestoreList';
import RestoreDetail from './pages/RestoreDetail';
import StorageLocations from './pages/StorageLocations';
import StorageLocationCreate from './pages/StorageLocationCreate';
import Schedules from './pages/Schedules';
import ScheduleCreate from './pages/ScheduleCreate';
import History from './pages/History';
import Queue from './pages/Queue';

function Routed() {
  const { session } = useSession();
  if (session === undefined) {
    return (
      <Bullseye>
        <Spinner aria-label={t.app.loading} />
      </Bullseye>
    );
  }
  if (session === null) return <SignIn />;
  const page = (element: React.ReactNode) => <Layout>{element}</Layout>;
  return (
    <NamespacesProvider user={session.username}>
      <Routes>
        <Route path="/" element={page(<NamespacePicker />)} />
        <Route path="/ns/:namespace" element={page(<Overview />)} />
        <Route path="/ns/:namespace/backups" element={page(<BackupList />)} />
        <Route path="/ns/:namespace/backups/new" element={page(<BackupCreate />)} />
        <Route path="/ns/:namespace/backups/:name" element={page(<BackupDetail />)} />
        <Route path="/ns/:namespace/backups/:name/restore" element={page(<RestoreWizard />)} />
        <Route path="/ns/:namespace/restores" element={page(<RestoreList />)} />
        <Route path="/ns/:namespace/restores/new" element={page(<RestoreWizard />)} />
        <Route path="/ns/:namespace/restores/:name" element={page(<RestoreDetail />)} />
        <Route path="/ns/:namespace/storage-locations" element={page(<StorageLocations />)} />
        <Route path="/ns/:namespace/storage-locations/new" element={page(<StorageLocationCreate />)} />
        <Route path="/ns/:namespace/schedules" element={page(<Schedules />)} />
        <Route path="/ns/:namespace/schedules/new" element={page(<ScheduleCreate />)} />
        <Route path="/ns/:namespace/history" element={page(<History />)} />
        <Route path="/ns/:namespace/queue" element={page(<Queue />)} />
        <Route path="*" element={page(<NamespacePicker />)} />
      </Routes>
    </NamespacesProvider>
  );
}

export default function App() {
  return (
    <SessionProvider>
      <BrowserRouter>
        <Routed />
      </BrowserRouter>
    </SessionProvider>
  );
}
